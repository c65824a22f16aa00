package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/route"
)

func init() {
	registerGroup("route", "approved routes: signer keys and signed DisclosureRoute@1 notes")
	register(
		&command{name: "route keygen", synopsis: "--name NAME -o SIGNER_KEY",
			summary: "write an Ed25519 signer key (0600) and print its verifier key", run: runRouteKeygen},
		&command{name: "route approve", synopsis: "--key SIGNER_KEY [-o NOTE] ROUTE.json",
			summary: "sign a DisclosureRoute@1 as a note (its text is the route's canonical JSON)", run: runRouteApprove},
	)
}

func runRouteKeygen(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("route keygen")
	name := fs.String("name", "", "the key's `name` (a reviewer's, e.g. reviewer.example)")
	out := fs.String("o", "", "write the signer key to `file` (0600, never over an existing file)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *name == "" || *out == "" || len(pos) != 0 {
		return c.usage()
	}
	k, err := route.GenerateKey(rand.Reader, *name)
	if err != nil {
		return err
	}
	defer k.Wipe()
	if err := route.WriteSignerKey(*out, k); err != nil {
		return err
	}
	fmt.Fprintln(c.Stdout, k.VerifierKey())
	c.hintf("give the verifier key above to whoever checks routes (--trust); keep %s private", *out)
	return nil
}

func runRouteApprove(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("route approve")
	keyPath := fs.String("key", "", "signer key `file` (route keygen)")
	out := fs.String("o", "", "write the signed note to `file` (default stdout)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *keyPath == "" || len(pos) != 1 {
		return c.usage()
	}
	doc, err := readFileCapped(pos[0], route.MaxRouteBytes)
	if err != nil {
		return fmt.Errorf("read route: %w", err)
	}
	k, err := route.ReadSignerKey(*keyPath)
	if err != nil {
		return err
	}
	defer k.Wipe()
	note, err := route.Approve(k, doc)
	if err != nil {
		return c.routeError(false, err)
	}
	if *out == "" {
		_, err = c.Stdout.Write(note)
		return err
	}
	return os.WriteFile(*out, note, 0o644)
}

// routeFlags are --route and --trust, of plan init, prepare and send.
type routeFlags struct {
	note  *string
	trust *stringList
}

func addRouteFlags(fs *flag.FlagSet) routeFlags {
	f := routeFlags{note: fs.String("route", "", "approved route `note` (route approve) the plan must keep to"), trust: &stringList{}}
	fs.Var(f.trust, "trust", "`file` of trusted verifier keys, one a line (repeatable; with --route)")
	return f
}

// open reads and verifies the route note under the trusted keys; nil
// without --route.
func (f routeFlags) open(c *Cmd, asJSON bool) (*route.Approved, error) {
	if *f.note == "" {
		if len(*f.trust) > 0 {
			return nil, usagef("--trust is given with --route")
		}
		return nil, nil
	}
	if len(*f.trust) == 0 {
		return nil, usagef("--route needs --trust: the verifier keys whose signature approves a route")
	}
	var keys []string
	for _, p := range *f.trust {
		k, err := route.ReadTrustFile(p)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	t, err := route.NewTrust(keys...)
	if err != nil {
		return nil, c.routeError(asJSON, err)
	}
	a, err := route.OpenFile(*f.note, t)
	if err != nil {
		return nil, c.routeError(asJSON, err)
	}
	return a, nil
}

// routeError prints a route refusal (PLAN_MISMATCH naming the field, exit
// 3); other errors are returned as they are.
func (c *Cmd) routeError(asJSON bool, err error) error {
	var re *route.Error
	if !errors.As(err, &re) {
		return err
	}
	c.errorf("%s: %v", c.name, err)
	return c.refuse(asJSON, []receipts.Refusal{{Code: re.Code, Part: -1, Kind: "plan"}}, nil)
}
