package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

func init() {
	register(&command{name: "rehydrate", summary: "rehydrate a quarantined answer inside vaultd (RehydrationReceipt@1)", run: runRehydrate})
}

// rehydratedDoc is what `cut rehydrate --json` prints: the rehydrated answer
// (it holds restored owner values — the one output that may), its receipt
// and the lease after it.
type rehydratedDoc struct {
	Result  json.RawMessage             `json:"result"`
	Receipt receipts.RehydrationReceipt `json:"receipt"`
	Lease   string                      `json:"lease"`
	State   string                      `json:"state"`
}

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
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *leaseRef == "" || *schemaPath == "" || len(pos) != 1 {
		return usagef("usage: cut rehydrate --vault SOCK --lease REF --schema S RETURN")
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
	doc, err := c.rehydrateLease(ctx, cl, rec, schema, ret, key, *asJSON)
	if err != nil {
		return err
	}
	return c.printRehydrated(doc, *asJSON, pf)
}

// dialVault connects to the vault named by --vault or $PRIVACYCUT_VAULT.
func (c *Cmd) dialVault(flagValue string) (*client.Client, error) {
	sock := c.vaultSocket(flagValue)
	if sock == "" {
		return nil, usagef("%v", errNoVault)
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
	cl, err := client.DialWith(sock, opt)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return cl, nil
}

// rehydrateLease asks the vault to rehydrate ret under the lease of rec. The
// schema must be the plan's (its digest is bound in the plan); the evidence
// key travels sealed to the vault so that the receipt's final digest is
// keyed. A refusal is printed (exit 3), with the JSON path and position of
// the refused value and never the value.
func (c *Cmd) rehydrateLease(ctx context.Context, cl *client.Client, rec *leaseRecord, schema, ret []byte, key *receipts.EvidenceKey, asJSON bool) (*rehydratedDoc, error) {
	canonical, err := canon.Canonicalize(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	// Fails closed: a record without the plan's schema digest licenses no
	// schema at all.
	if err := c.checkSchemaDigest(rec.OutputSchemaDigest, receipts.SHA256(canonical), asJSON); err != nil {
		return nil, err
	}
	expiry, err := time.Parse(time.RFC3339Nano, rec.ExpiresAt)
	if err != nil {
		return nil, fmt.Errorf("lease record: expires_at: %w", err)
	}
	st, err := cl.Status(ctx)
	if err != nil {
		return nil, c.vaultError(asJSON, err)
	}
	sealedKey, err := vaultapi.SealEvidenceKey(st.SealKey, key)
	if err != nil {
		return nil, c.vaultError(asJSON, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The rehydration is not canceled halfway: the vault consumes the lease
	// and destroys its key before it replies, so a reply abandoned after
	// that would lose the only rehydrated answer. (The vault itself stops
	// before consuming when nobody waits for the result.)
	res, err := cl.Rehydrate(context.WithoutCancel(ctx), vaultapi.RehydrateRequest{
		Lease:            rec.Lease,
		Claim:            vaultapi.ClaimRequest{Run: rec.Run, Attempt: rec.Attempt, Station: rec.Station, ReturnDigest: receipts.SHA256(ret)},
		Schema:           schema,
		Return:           ret,
		CutExpiry:        expiry,
		Retention:        rec.Retention,
		PolicyRevision:   rec.PolicyRevision,
		VerifierRevision: rec.VerifierRevision,
		LabelDigest:      rec.LabelDigest,
		EvidenceKey:      sealedKey,
	})
	if err != nil {
		return nil, c.rehydrateRefusal(asJSON, err)
	}
	// The answer the user asked for, printed or written: the one place its
	// plaintext is meant to go.
	return &rehydratedDoc{Result: json.RawMessage(res.Output), Receipt: res.Receipt, Lease: res.Lease.ID, State: res.Lease.State.String()}, nil
}

// rehydrateRefusal prints a refused rehydration: code, JSON path and the
// position of the refused value in the return (never the value or token).
func (c *Cmd) rehydrateRefusal(asJSON bool, err error) error {
	code := vaultapi.CodeOf(err)
	if code == "" {
		return err
	}
	r := receipts.Refusal{Code: code, Part: -1, Kind: "return"}
	var rr *receipts.Refusal
	if errors.As(err, &rr) {
		r = *rr
	}
	doc := receipts.RefusalDocument{Refused: true, EventID: receipts.NewEventID(), Reasons: []receipts.Refusal{r}}
	c.journal(doc.EventID, doc.Reasons)
	if asJSON {
		if err := c.printJSON(doc); err != nil {
			return err
		}
	} else {
		where := "return"
		if r.Path != "" {
			where = fmt.Sprintf("return %s line %d col %d len %d", r.Path, r.Line, r.Column, r.Length)
		}
		fmt.Fprintf(c.Stdout, "refused: 1 reason (event %s)\n%s: %s\n", doc.EventID, where, r.Code)
	}
	return &refusedError{1}
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

// readOutputSchema reads and parses the output schema of a reversible cut.
// A file that is not a schema of the subset (rehydrate.ParseSchema) is an
// error before anything else happens.
func readOutputSchema(path string) ([]byte, *rehydrate.Schema, error) {
	data, err := readFileCapped(path, rehydrate.MaxSchemaBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read schema: %w", err)
	}
	s, err := rehydrate.ParseSchema(data)
	if err != nil {
		return nil, nil, fmt.Errorf("schema: %w", err)
	}
	return data, s, nil
}

// checkSchemaDigest refuses (PLAN_MISMATCH, exit 3) a schema whose digest
// is not the plan's output_schema_digest, and any schema when the plan
// binds none.
func (c *Cmd) checkSchemaDigest(planDigest, digest string, asJSON bool) error {
	if planDigest != "" && digest == planDigest {
		return nil
	}
	c.errorf("%s: the schema is not the plan's output schema", c.name)
	return c.refuse(asJSON, []receipts.Refusal{{Code: receipts.PlanMismatch, Part: -1, Kind: "schema"}}, nil)
}
