package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
)

func init() {
	register(&command{name: "rehydrate", synopsis: "--lease REF --schema S [--vault SOCK] [-o F] [--json] RETURN",
		summary: "rehydrate a quarantined answer inside vaultd (RehydrationReceipt@1)", run: runRehydrate})
}

// rehydratedDoc is what `cut rehydrate --json` prints: the rehydrated answer
// (it holds restored owner values — the one output that may), its receipt
// and the lease after it.
type rehydratedDoc = pipeline.Rehydrated

func runRehydrate(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("rehydrate")
	vault := fs.String("vault", "", "vaultd `socket` (default $PRIVACYCUT_VAULT)")
	leaseRef := fs.String("lease", "", "lease `reference` (pcl:…)")
	schemaPath := fs.String("schema", "", "output schema `file` (must be the plan's)")
	keyPath := fs.String("evidence-key", "", "evidence key `file`")
	out := fs.String("o", "", "write the rehydrated answer to `file` (0600) instead of stdout")
	asJSON := fs.Bool("json", false, "print one JSON document (answer, receipt, lease)")
	run := fs.String("run", "", "override the run id of the claim")
	attempt := fs.Int("attempt", 0, "override the attempt of the claim")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *leaseRef == "" || *schemaPath == "" || len(pos) != 1 {
		return c.usage()
	}
	// Without a vault that answers nothing else matters: say so first.
	if sock := c.vaultSocket(*vault); sock == "" {
		return &vaultDownError{}
	} else if err := probeVault(sock); err != nil {
		return err
	}
	rec, err := c.readRecord(*leaseRef)
	if err != nil {
		return err
	}
	if *run != "" {
		rec.Run = *run
	}
	if *attempt > 0 {
		rec.Attempt = uint32(*attempt)
	}
	schema, err := readFileCapped(*schemaPath, 1<<20)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	ret, over, err := readCapped(c, pos[0], MaxAnswerBytes)
	if err != nil || over {
		return fmt.Errorf("read return: %v", errOr(err, "too large"))
	}
	key, err := c.evidenceKey(*keyPath)
	if err != nil {
		return err
	}
	// The output file exists before the vault consumes the lease: once it
	// has, the answer cannot be asked for again.
	var pf *outputFile
	if *out != "" {
		if pf, err = createOutput(*out, 0o600); err != nil {
			return fmt.Errorf("output file: %w", err)
		}
		defer pf.abort()
	}
	cl, err := c.dialVault(*vault)
	if err != nil {
		return err
	}
	defer cl.Close()
	p, err := c.newPipeline(key, pipeline.InProcess(), cl)
	if err != nil {
		return err
	}
	doc, err := p.Rehydrate(ctx, *rec, schema, ret)
	if err != nil {
		return c.pipelineError(*asJSON, err)
	}
	return c.printRehydrated(doc, *asJSON, pf)
}

// dialVault connects to the vault named by --vault or $PRIVACYCUT_VAULT.
func (c *Cmd) dialVault(flagValue string) (*client.Client, error) {
	sock := c.vaultSocket(flagValue)
	if sock == "" {
		return nil, &vaultDownError{}
	}
	return c.dialSocket(sock)
}

// dialSocket connects to the vault at sock. The vault must run as root, as
// this process's uid, or as a uid $PRIVACYCUT_VAULT_UID names (a
// comma-separated list: a vaultd under a service account); the kernel's
// word for the server's uid is checked on every connection.
func (c *Cmd) dialSocket(sock string) (*client.Client, error) {
	var opt client.DialOptions
	if v := c.Getenv("PRIVACYCUT_VAULT_UID"); v != "" {
		for _, f := range strings.Split(v, ",") {
			uid, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return nil, usagef("$PRIVACYCUT_VAULT_UID must be a comma-separated list of uids")
			}
			opt.ServerUIDs = append(opt.ServerUIDs, uint32(uid))
		}
	}
	c.sock = sock
	if err := probeVault(sock); err != nil {
		return nil, err
	}
	cl, err := client.DialWith(sock, opt)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return cl, nil
}

// printRehydrated prints the rehydrated answer, or writes it to out (nil:
// stdout) and prints the rest.
func (c *Cmd) printRehydrated(doc *rehydratedDoc, asJSON bool, out *outputFile) error {
	if out != nil {
		if err := out.commit(append(append([]byte{}, doc.Result...), '\n')); err != nil {
			// The lease is consumed: the answer goes to stdout rather
			// than nowhere.
			c.errorf("%s: writing %s: %v; the answer follows on stdout", c.name, out.path, err)
			out = nil
		}
	}
	if asJSON {
		d := *doc
		if out != nil {
			d.Result = json.RawMessage("null")
		}
		return c.printJSON(d)
	}
	if out == nil {
		fmt.Fprintf(c.Stdout, "%s\n", doc.Result)
	} else {
		fmt.Fprintf(c.Stdout, "rehydrated answer written to %s\n", out.path)
	}
	printReceipt(c, doc.Receipt, doc.State)
	return nil
}

func printReceipt(c *Cmd, r receipts.RehydrationReceipt, state string) {
	fmt.Fprintf(c.Stdout, "receipt: %s lease %s (now %s)\n", r.Schema, r.Lease, state)
	fmt.Fprintf(c.Stdout, "  substituted: %s\n", summary(r.Substitutions))
	fmt.Fprintf(c.Stdout, "  return %s\n  final  %s\n  purge at %s\n", r.ReturnDigest, r.FinalDigest, r.PurgeAt)
}
