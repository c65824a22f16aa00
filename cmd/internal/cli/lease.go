package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/privacycut/privacycut/vault/vaultapi"
)

func init() {
	registerGroup("lease", "vaultd's leases: list, show, revoke")
	register(
		&command{name: "lease list", synopsis: "[--json] [--vault SOCK]", summary: "list the vault's leases, oldest first, with their age, state and the state of their keys", run: leaseList},
		&command{name: "lease show", synopsis: "[--json] [--vault SOCK] REF", summary: "show one lease", run: leaseShow},
		&command{name: "lease revoke", synopsis: "[--json] [--vault SOCK] REF", summary: "revoke a lease: its data key is destroyed", run: leaseRevoke},
	)
}

// leaseListOut is the --json output of cut lease list: every lease with
// the state of its data key, oldest first (by creation time, then id).
// Leases are public metadata; no map material is ever printed.
type leaseListOut struct {
	Leases []vaultapi.Info `json:"leases"`
}

func leaseList(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("lease list")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return c.usage()
	}
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	infos, err := cl.List(ctx)
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	sortLeases(infos)
	if *f.asJSON {
		if infos == nil {
			infos = []vaultapi.Info{}
		}
		return c.printJSON(leaseListOut{Leases: infos})
	}
	if len(infos) == 0 {
		fmt.Fprintln(c.Stdout, "no leases")
		return nil
	}
	now := time.Now()
	fmt.Fprintf(c.Stdout, "%-30s  %6s  %-8s  %-9s  %-20s  %s\n", "LEASE", "AGE", "STATE", "KEY", "DEADLINE", "RUN/ATTEMPT")
	for _, in := range infos {
		l := in.Lease
		fmt.Fprintf(c.Stdout, "%-30s  %6s  %-8s  %-9s  %-20s  %s/%d\n", l.ID, age(now.Sub(l.CreatedAt)), l.State, in.Key,
			l.Deadline.Format(time.RFC3339), l.Run, l.Attempt)
	}
	return nil
}

// sortLeases orders leases by creation time, oldest first (the newest
// ends the listing, next to the prompt), then by id.
func sortLeases(infos []vaultapi.Info) {
	sort.SliceStable(infos, func(i, j int) bool {
		a, b := infos[i].Lease, infos[j].Lease
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}

// age is a lease's age in its largest two units: 45s, 12m, 3h05m, 2d04h.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

func leaseShow(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("lease show")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usage()
	}
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	in, err := cl.Show(ctx, pos[0])
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	if *f.asJSON {
		return c.printJSON(in)
	}
	printInfo(c.Stdout, in)
	return nil
}

func leaseRevoke(ctx context.Context, c *Cmd, args []string) error {
	fs, f := c.vaultFlagSet("lease revoke")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usage()
	}
	cl, err := c.dial(f)
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.Revoke(ctx, pos[0])
	if err != nil {
		return c.vaultError(*f.asJSON, err)
	}
	in := vaultapi.Info{Lease: l, Key: vaultapi.KeyDestroyed}
	if !l.KeyDestroyed {
		in.Key = vaultapi.KeyPresent // destruction pending; the vault completes it
	}
	if *f.asJSON {
		return c.printJSON(in)
	}
	fmt.Fprintf(c.Stdout, "revoked %s; data key %s\n", l.ID, in.Key)
	return nil
}

func printInfo(w io.Writer, in vaultapi.Info) {
	l := in.Lease
	fmt.Fprintf(w, "lease:      %s\n", l.ID)
	fmt.Fprintf(w, "state:      %s (seq %d, updated %s)\n", l.State, l.Seq, l.UpdatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "data key:   %s (grant epoch %d)\n", in.Key, l.KeyEpoch)
	fmt.Fprintf(w, "deadline:   %s (created %s)\n", l.Deadline.Format(time.RFC3339), l.CreatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "run:        %s attempt %d\n", l.Run, l.Attempt)
	fmt.Fprintf(w, "station:    %s, principal %s\n", l.Station, l.Principal)
	fmt.Fprintf(w, "target:     %s\n", l.Target)
	fmt.Fprintf(w, "purpose:    %s\n", l.Purpose)
	fmt.Fprintf(w, "namespace:  %s\n", l.Namespace)
	if l.Bound() {
		fmt.Fprintf(w, "cut event:  %s\n", l.CutEvent)
		fmt.Fprintf(w, "export:     %s\n", l.ExportDigest)
	}
	if l.ClaimedBy != nil {
		fmt.Fprintf(w, "claimed by: %s run %s attempt %d station %s return %s\n", l.ClaimedBy.Principal,
			l.ClaimedBy.Run, l.ClaimedBy.Attempt, l.ClaimedBy.Station, l.ClaimedBy.ReturnDigest)
	}
}
