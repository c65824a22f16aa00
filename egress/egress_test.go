package egress_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

// setup returns an authority journaling into a fresh directory and driven
// by clk.
func setup(t testing.TB, clk *clock) (*egress.Authority, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
	return egress.NewAuthority(egress.Options{
		Journal: egress.OpenJournal(path), Now: clk.now, PolicyRevision: policy,
	}), path
}

func mustSeal(t testing.TB, a *egress.Authority, req egress.UnverifiedSeal) receipts.PrivacyCut {
	t.Helper()
	cut, err := a.SealUnverified(req)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return cut
}

func asError(t *testing.T, err error) *egress.Error {
	t.Helper()
	var e *egress.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *egress.Error", err)
	}
	return e
}

func TestSealAndAdmit(t *testing.T) {
	clk := &clock{t0}
	a, path := setup(t, clk)
	f := newFixture()
	req := f.build(t)

	cut := mustSeal(t, a, req)
	if !strings.HasPrefix(cut.EventID, "evt:") || len(cut.EventID) != len("evt:")+26 {
		t.Fatalf("seal event id %q is not evt: and 26 characters", cut.EventID)
	}
	wantCut := receipts.PrivacyCut{
		Schema:             receipts.SchemaPrivacyCut,
		EventID:            cut.EventID,
		SourceDigest:       srcDigest,
		ExportDigest:       receipts.SHA256([]byte(exportBytes)),
		WireDigest:         receipts.SHA256([]byte(exportBytes)),
		PlanDigest:         mustDigest(t, &req.Plan),
		ReceiptsDigest:     mustDigest(t, &req.Receipts[1]),
		VerificationDigest: mustDigest(t, &req.Verification),
		Verdict:            "pass",
		PolicyRevision:     policy,
		Target:             f.Target,
		Consumer:           f.Consumer,
		MaxUses:            2,
		ExpiresAt:          f.Expires,
		SealedAt:           "2026-01-02T10:00:00Z",
	}
	if diff := cmp.Diff(wantCut, cut); diff != "" {
		t.Errorf("PrivacyCut (-want +got):\n%s", diff)
	}

	clk.t = t0.Add(time.Minute)
	d, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	want := receipts.EgressDecision{
		Schema: receipts.SchemaEgress, EventID: d.EventID, Seal: cut.EventID, Admit: true,
		Target: f.Target, Consumer: f.Consumer, BodyDigest: cut.ExportDigest,
		Use: 1, MaxUses: 2, DecidedAt: "2026-01-02T10:01:00Z",
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	if d.EventID == cut.EventID || !strings.HasPrefix(d.EventID, "evt:") {
		t.Errorf("decision event id %q: want a fresh evt: id", d.EventID)
	}

	wantJournal := []egress.Entry{
		{EventID: cut.EventID, Time: t0, Kind: "seal", Command: "seal", Seal: cut.EventID, Digest: cut.ExportDigest, Plan: cut.PlanDigest},
		{EventID: d.EventID, Time: t0.Add(time.Minute), Kind: "admit", Command: "admit", Seal: cut.EventID, Digest: cut.ExportDigest, Plan: cut.PlanDigest, Use: 1},
	}
	if diff := cmp.Diff(wantJournal, readJournal(t, path)); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

func TestSealReversibleWithLease(t *testing.T) {
	a, _ := setup(t, &clock{t0})
	f := newFixture()
	f.Mode, f.Lease = receipts.ModeReversible, "pcl:"+strings.Repeat("a", 26)
	cut := mustSeal(t, a, f.build(t))
	if cut.Lease != f.Lease {
		t.Errorf("Lease = %q, want %q", cut.Lease, f.Lease)
	}
}

func TestSealRefusals(t *testing.T) {
	tests := []struct {
		name   string
		policy string                       // authority's revision; "" means policy
		fix    func(*fixture)               // before digests are derived
		mut    func(*egress.UnverifiedSeal) // after: breaks one binding
		deny   bool                         // DenyLocal the export first
		reason string
	}{
		{name: "verdict fail", mut: func(r *egress.UnverifiedSeal) { r.Verification.Verdict = "fail" }, reason: "verdict"},
		{name: "pass with a failed claim", mut: func(r *egress.UnverifiedSeal) { r.Verification.Claims[5].OK = false }, reason: "verdict"},
		{name: "pass with a claim missing", mut: func(r *egress.UnverifiedSeal) { r.Verification.Claims = r.Verification.Claims[:7] }, reason: "verdict"},
		{name: "pass with claims reordered", mut: func(r *egress.UnverifiedSeal) {
			c := r.Verification.Claims
			c[0], c[1] = c[1], c[0]
		}, reason: "verdict"},
		{name: "plan schema", mut: func(r *egress.UnverifiedSeal) { r.Plan.Schema = "DisclosurePlan@2" }, reason: "schema"},
		{name: "verification schema", mut: func(r *egress.UnverifiedSeal) { r.Verification.Schema = "" }, reason: "schema"},
		{name: "receipt schema", mut: func(r *egress.UnverifiedSeal) { r.Receipts[0].Schema = "x" }, reason: "schema"},
		{name: "mode differs", mut: func(r *egress.UnverifiedSeal) { r.Verification.Mode = receipts.ModeReversible }, reason: "mode"},
		{name: "mode unknown", fix: func(f *fixture) { f.Mode = "partial" }, reason: "mode"},
		{name: "reversible without lease", fix: func(f *fixture) { f.Mode = receipts.ModeReversible }, reason: "lease"},
		{name: "irreversible with lease", fix: func(f *fixture) { f.Lease = "pcl:" + strings.Repeat("b", 26) }, reason: "lease"},
		{name: "wrong policy revision", fix: func(f *fixture) { f.Policy = "privacycut-policy/0" }, reason: "policy-revision"},
		{name: "authority without policy revision", policy: "-", reason: "policy-revision"},
		{name: "authority and plan without policy revision", policy: "-", fix: func(f *fixture) { f.Policy = "" }, reason: "policy-revision"},
		{name: "expired plan", fix: func(f *fixture) { f.Expires = t0.Add(-time.Second).Format(time.RFC3339) }, reason: "expired"},
		{name: "plan expiring now", fix: func(f *fixture) { f.Expires = t0.Format(time.RFC3339) }, reason: "expired"},
		{name: "unparsable expiry", fix: func(f *fixture) { f.Expires = "tomorrow" }, reason: "expiry"},
		{name: "max uses zero", fix: func(f *fixture) { f.MaxUses = 0 }, reason: "max-uses"},
		{name: "no target", fix: func(f *fixture) { f.Target = "" }, reason: "target"},
		{name: "no consumer id", fix: func(f *fixture) { f.Consumer.ID = "" }, reason: "consumer"},
		{name: "export one byte changed", mut: func(r *egress.UnverifiedSeal) { r.Export[len(r.Export)-2] ^= 1 }, reason: "export-digest"},
		{name: "verification export digest", mut: func(r *egress.UnverifiedSeal) { r.Verification.ExportDigest = "sha256:" + strings.Repeat("0", 64) }, reason: "export-digest"},
		{name: "source digest differs from verification", mut: func(r *egress.UnverifiedSeal) { r.SourceDigest = "hmac-sha256:" + strings.Repeat("b2", 32) }, reason: "source-digest"},
		{name: "source digest not keyed", mut: func(r *egress.UnverifiedSeal) {
			r.SourceDigest = "sha256:" + strings.Repeat("a1", 32)
			r.Verification.SourceDigest = r.SourceDigest
		}, reason: "source-digest"},
		{name: "source digest empty", mut: func(r *egress.UnverifiedSeal) { r.SourceDigest, r.Verification.SourceDigest = "", "" }, reason: "source-digest"},
		{name: "restricted ref", mut: func(r *egress.UnverifiedSeal) { r.Plan.RestrictedRef = "hmac-sha256:" + strings.Repeat("b2", 32) }, reason: "restricted-ref"},
		{name: "verification plan digest", mut: func(r *egress.UnverifiedSeal) { r.Verification.PlanDigest = "sha256:" + strings.Repeat("1", 64) }, reason: "plan-digest"},
		{name: "plan target substituted", mut: func(r *egress.UnverifiedSeal) { r.Plan.Target = "https://evil.example.net/v1/triage" }, reason: "plan-digest"},
		{name: "plan consumer substituted", mut: func(r *egress.UnverifiedSeal) { r.Plan.Consumer.ID = "other" }, reason: "plan-digest"},
		{name: "receipt plan digest", mut: func(r *egress.UnverifiedSeal) { r.Receipts[0].PlanDigest = "sha256:" + strings.Repeat("2", 64) }, reason: "plan-digest"},
		{name: "verification vocabulary digest", mut: func(r *egress.UnverifiedSeal) { r.Verification.VocabularyDigest = "sha256:" + strings.Repeat("3", 64) }, reason: "vocabulary-digest"},
		{name: "no vocabulary digest anywhere", fix: func(f *fixture) { f.Vocab = "" }, reason: "vocabulary-digest"},
		{name: "receipt vocabulary digest", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].VocabularyDigest = "sha256:" + strings.Repeat("3", 64) }, reason: "vocabulary-digest"},
		{name: "no receipts", mut: func(r *egress.UnverifiedSeal) { r.Receipts = nil }, reason: "receipt-chain"},
		{name: "receipt dropped", mut: func(r *egress.UnverifiedSeal) { r.Receipts = r.Receipts[1:] }, reason: "receipt-chain"},
		{name: "receipts reordered", mut: func(r *egress.UnverifiedSeal) {
			r.Receipts[0], r.Receipts[1] = r.Receipts[1], r.Receipts[0]
		}, reason: "receipt-chain"},
		{name: "receipt re-digested", mut: func(r *egress.UnverifiedSeal) { r.Receipts[0].Operations[0].Count = 2 }, reason: "receipt-chain"},
		{name: "parent missing", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].Parents = nil }, reason: "receipt-chain"},
		{name: "first input not the source", mut: func(r *egress.UnverifiedSeal) { r.Receipts[0].InputDigest = candDigest }, reason: "receipt-chain"},
		// Only the first input differs: parents and the receipts digest are
		// derived from that receipt, so only the source binding can fail.
		{name: "first input not the source, chain consistent", fix: func(f *fixture) { f.Input = manifestDigest }, reason: "receipt-chain"},
		{name: "inputs not linked", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].InputDigest = srcDigest }, reason: "receipt-chain"},
		{name: "label digest differs", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].LabelDigest = candDigest }, reason: "receipt-chain"},
		{name: "last receipt not terminal", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].Terminal = false }, reason: "terminal"},
		{name: "first receipt terminal", mut: func(r *egress.UnverifiedSeal) { r.Receipts[0].Terminal = true }, reason: "terminal"},
		{name: "terminal binds other export", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].ExportDigest = "sha256:" + strings.Repeat("4", 64) }, reason: "terminal"},
		{name: "terminal output other export", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].OutputDigest = "sha256:" + strings.Repeat("4", 64) }, reason: "terminal"},
		{name: "terminal receipt re-digested", mut: func(r *egress.UnverifiedSeal) { r.Receipts[1].Operations[0].Count = 9 }, reason: "receipts-digest"},
		{name: "verification receipts digest", mut: func(r *egress.UnverifiedSeal) { r.Verification.ReceiptsDigest = "sha256:" + strings.Repeat("5", 64) }, reason: "receipts-digest"},
		{name: "local-only export", deny: true, reason: "local-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := policy
			switch tt.policy {
			case "-":
				rev = ""
			case "":
			default:
				rev = tt.policy
			}
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			a := egress.NewAuthority(egress.Options{Journal: egress.OpenJournal(path), Now: (&clock{t0}).now, PolicyRevision: rev})
			f := newFixture()
			if tt.fix != nil {
				tt.fix(&f)
			}
			req := f.build(t)
			if tt.mut != nil {
				tt.mut(&req)
			}
			if tt.deny {
				a.DenyLocal(receipts.SHA256(req.Export))
			}
			cut, err := a.SealUnverified(req)
			e := asError(t, err)
			if diff := cmp.Diff(&egress.Error{Op: "seal", Code: receipts.PlanMismatch, Reason: tt.reason},
				e, cmpopts.IgnoreFields(egress.Error{}, "EventID")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if cut.EventID != "" {
				t.Errorf("refused seal has event id %q", cut.EventID)
			}
			if want := "egress: seal refused: PLAN_MISMATCH: " + tt.reason; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
			wantJournal := []egress.Entry{{EventID: e.EventID, Time: t0, Kind: "refusal", Command: "seal",
				Codes: []receipts.Code{receipts.PlanMismatch}, Reason: tt.reason}}
			if diff := cmp.Diff(wantJournal, readJournal(t, path)); diff != "" {
				t.Errorf("journal (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(e.EventID, "evt:") {
				t.Errorf("refusal event id %q", e.EventID)
			}
		})
	}
}

// The same plan and export cannot be sealed twice by one authority: a
// second seal would double the use ceiling.
func TestSealTwiceRefused(t *testing.T) {
	a, _ := setup(t, &clock{t0})
	req := newFixture().build(t)
	mustSeal(t, a, req)
	_, err := a.SealUnverified(req)
	if e := asError(t, err); e.Reason != egress.ReasonSealed || e.Code != receipts.PlanMismatch {
		t.Errorf("second seal: %v, want PLAN_MISMATCH sealed", err)
	}
	// Another plan (another target) for the same export is another cut.
	f := newFixture()
	f.Target = "https://models.example.net/v1/other"
	mustSeal(t, a, f.build(t))
}

func TestAdmitRefusals(t *testing.T) {
	f := newFixture()
	body := []byte(exportBytes)
	tampered := []byte(exportBytes)
	tampered[len(tampered)-30] ^= 0x01
	rehydrated := []byte(`{"answer":"owner module is restored here"}`)

	type call struct {
		body     []byte
		target   string
		consumer receipts.Consumer
	}
	good := call{body, f.Target, f.Consumer}
	tests := []struct {
		name    string
		before  func(t *testing.T, a *egress.Authority, clk *clock, seal string)
		fresh   bool // admit on a new Authority ("a new process")
		badSeal bool // admit under an id that was never a seal
		call    call
		code    receipts.Code
		reason  string
		known   bool // the decision and journal name the seal
	}{
		{name: "wrong target", call: call{body, "https://models.example.net/v1/other", f.Consumer}, code: receipts.PlanMismatch, reason: "target", known: true},
		{name: "target trailing slash", call: call{body, f.Target + "/", f.Consumer}, code: receipts.PlanMismatch, reason: "target", known: true},
		{name: "target case", call: call{body, "https://Models.example.net/v1/triage", f.Consumer}, code: receipts.PlanMismatch, reason: "target", known: true},
		{name: "wrong consumer id", call: call{body, f.Target, receipts.Consumer{Kind: "model", ID: "triage-small"}}, code: receipts.PlanMismatch, reason: "consumer", known: true},
		{name: "wrong consumer kind", call: call{body, f.Target, receipts.Consumer{Kind: "agent", ID: "triage-large"}}, code: receipts.PlanMismatch, reason: "consumer", known: true},
		{name: "one body byte changed", call: call{tampered, f.Target, f.Consumer}, code: receipts.PlanMismatch, reason: "body", known: true},
		{name: "body with a byte appended", call: call{append([]byte(exportBytes), '\n'), f.Target, f.Consumer}, code: receipts.PlanMismatch, reason: "body", known: true},
		{name: "empty body", call: call{nil, f.Target, f.Consumer}, code: receipts.PlanMismatch, reason: "body", known: true},
		{name: "expired seal", before: func(t *testing.T, a *egress.Authority, clk *clock, seal string) {
			clk.t = t0.Add(time.Hour) // exactly expires_at
		}, call: good, code: receipts.PlanMismatch, reason: "expired", known: true},
		{name: "uses exhausted", before: func(t *testing.T, a *egress.Authority, clk *clock, seal string) {
			for range 2 {
				if _, err := a.Admit(seal, body, f.Target, f.Consumer); err != nil {
					t.Fatalf("Admit: %v", err)
				}
			}
		}, call: good, code: receipts.LimitExceeded, reason: "uses-exhausted", known: true},
		{name: "new process has no seal", fresh: true, call: good, code: receipts.PlanMismatch, reason: "no-seal"},
		{name: "unknown seal id", badSeal: true, call: good, code: receipts.PlanMismatch, reason: "no-seal"},
		{name: "rehydrated result under the seal", before: func(t *testing.T, a *egress.Authority, clk *clock, seal string) {
			a.DenyLocal(receipts.SHA256(rehydrated))
		}, call: call{rehydrated, f.Target, f.Consumer}, code: receipts.PlanMismatch, reason: "local-only", known: true},
		{name: "rehydrated result without a seal", badSeal: true, before: func(t *testing.T, a *egress.Authority, clk *clock, seal string) {
			a.DenyLocal(receipts.SHA256(rehydrated))
		}, call: call{rehydrated, f.Target, f.Consumer}, code: receipts.PlanMismatch, reason: "local-only"},
		{name: "sealed export registered local-only", before: func(t *testing.T, a *egress.Authority, clk *clock, seal string) {
			a.DenyLocal(receipts.SHA256(body))
		}, call: good, code: receipts.PlanMismatch, reason: "local-only", known: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t0}
			a, path := setup(t, clk)
			cut := mustSeal(t, a, f.build(t))
			seal := cut.EventID
			if tt.before != nil {
				tt.before(t, a, clk, seal)
			}
			if tt.fresh {
				a = egress.NewAuthority(egress.Options{Journal: egress.OpenJournal(path), Now: clk.now, PolicyRevision: policy})
			}
			if tt.badSeal {
				seal = receipts.NewEventID()
			}
			before := len(readJournal(t, path))

			d, err := a.Admit(seal, tt.call.body, tt.call.target, tt.call.consumer)
			e := asError(t, err)
			if diff := cmp.Diff(&egress.Error{Op: "admit", Code: tt.code, Reason: tt.reason, EventID: d.EventID}, e); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			want := receipts.EgressDecision{
				Schema: receipts.SchemaEgress, EventID: d.EventID, Admit: false,
				Code: tt.code, Reason: tt.reason, // no caller-supplied target or consumer
				DecidedAt: clk.t.Format(time.RFC3339Nano),
			}
			wantEntry := egress.Entry{EventID: d.EventID, Time: clk.t, Kind: "refusal", Command: "admit",
				Codes: []receipts.Code{tt.code}, Reason: tt.reason}
			if tt.known {
				want.Seal, want.MaxUses = cut.EventID, cut.MaxUses
				wantEntry.Seal, wantEntry.Digest, wantEntry.Plan = cut.EventID, cut.ExportDigest, cut.PlanDigest
				if string(tt.call.body) == exportBytes {
					want.BodyDigest = cut.ExportDigest
				}
			}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(d.EventID, "evt:") || d.EventID == cut.EventID {
				t.Errorf("decision event id %q is not a fresh event id", d.EventID)
			}
			lines := readJournal(t, path)
			if len(lines) != before+1 {
				t.Fatalf("journal grew by %d lines, want 1", len(lines)-before)
			}
			if diff := cmp.Diff(wantEntry, lines[len(lines)-1]); diff != "" {
				t.Errorf("journal entry (-want +got):\n%s", diff)
			}
		})
	}
}

// A refusal consumes no use: after refusals the full ceiling is still there.
func TestRefusalConsumesNoUse(t *testing.T) {
	a, _ := setup(t, &clock{t0})
	f := newFixture()
	cut := mustSeal(t, a, f.build(t))
	for range 5 {
		if _, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target+"?", f.Consumer); err == nil {
			t.Fatal("wrong target admitted")
		}
	}
	for use := 1; use <= 2; use++ {
		d, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
		if err != nil || d.Use != use {
			t.Fatalf("admission %d: use %d, err %v", use, d.Use, err)
		}
	}
}

func TestExactRedelivery(t *testing.T) {
	clk := &clock{t0}
	a, path := setup(t, clk)
	f := newFixture() // max_uses = 2
	cut := mustSeal(t, a, f.build(t))

	var ids []string
	for use := 1; use <= 2; use++ {
		d, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
		if err != nil {
			t.Fatalf("delivery %d: %v", use, err)
		}
		if !d.Admit || d.Use != use || d.MaxUses != 2 {
			t.Fatalf("delivery %d: admit %v use %d/%d", use, d.Admit, d.Use, d.MaxUses)
		}
		ids = append(ids, d.EventID)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two admissions share event id %q", ids[0])
	}
	d, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
	if e := asError(t, err); e.Code != receipts.LimitExceeded || e.Reason != "uses-exhausted" || d.Admit {
		t.Fatalf("third delivery: %v, admit %v", err, d.Admit)
	}
	if d.EventID == ids[0] || d.EventID == ids[1] {
		t.Errorf("refusal reuses an admission's event id")
	}
	got := readJournal(t, path)
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]string{"seal", "admit", "admit", "refusal"}, kinds); diff != "" {
		t.Errorf("journal kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{ids[0], ids[1], d.EventID}, []string{got[1].EventID, got[2].EventID, got[3].EventID}); diff != "" {
		t.Errorf("journal event ids (-want +got):\n%s", diff)
	}
	if got[1].Use != 1 || got[2].Use != 2 || got[3].Use != 0 {
		t.Errorf("journal uses %d,%d,%d; want 1,2,0", got[1].Use, got[2].Use, got[3].Use)
	}
}

func TestConcurrentAdmitNeverExceedsMaxUses(t *testing.T) {
	const n, maxUses = 100, 3
	a, path := setup(t, &clock{t0})
	f := newFixture()
	f.MaxUses = maxUses
	cut := mustSeal(t, a, f.build(t))

	start := make(chan struct{})
	decisions := make([]receipts.EgressDecision, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			decisions[i], errs[i] = a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
		})
	}
	close(start)
	wg.Wait()

	var uses []int
	ids := map[string]bool{}
	refused := 0
	for i, d := range decisions {
		ids[d.EventID] = true
		if d.Admit {
			if errs[i] != nil {
				t.Errorf("admission with error %v", errs[i])
			}
			uses = append(uses, d.Use)
			continue
		}
		if e := asError(t, errs[i]); e.Code != receipts.LimitExceeded {
			t.Errorf("refusal code %s, want LIMIT_EXCEEDED", e.Code)
		}
		refused++
	}
	slices.Sort(uses)
	if diff := cmp.Diff([]int{1, 2, 3}, uses); diff != "" {
		t.Errorf("uses (-want +got):\n%s", diff)
	}
	if refused != n-maxUses || len(ids) != n {
		t.Errorf("refused %d (want %d), distinct event ids %d (want %d)", refused, n-maxUses, len(ids), n)
	}
	admits, refusals := 0, 0
	for _, e := range readJournal(t, path) {
		switch e.Kind {
		case "admit":
			admits++
		case "refusal":
			refusals++
		}
	}
	if admits != maxUses || refusals != n-maxUses {
		t.Errorf("journal: %d admit, %d refusal lines; want %d, %d", admits, refusals, maxUses, n-maxUses)
	}
}

// TestCanary passes bodies and exports carrying a planted owner value: it
// must appear in no journal line, no error text and no decision, and
// neither must a digest of those unsealed bytes.
func TestCanary(t *testing.T) {
	const canary = "git.corp.example/payments/ledger-CANARY-5b1e"
	clk := &clock{t0}
	a, path := setup(t, clk)
	f := newFixture()
	cut := mustSeal(t, a, f.build(t))

	leaky := []byte(strings.Replace(exportBytes, "redacted:module:1", canary, 1))
	var texts []string
	var forbidden = []string{canary, receipts.SHA256(leaky)}

	// Admit a body with the value restored, under the seal and under none.
	for _, seal := range []string{cut.EventID, "evt:" + strings.Repeat("a", 26)} {
		d, err := a.Admit(seal, leaky, f.Target, f.Consumer)
		if err == nil || d.Admit {
			t.Fatalf("leaky body admitted")
		}
		dj, _ := json.Marshal(d)
		texts = append(texts, err.Error(), string(dj))
	}
	// A rehydrated result holding the value, registered local-only.
	result := []byte(`{"module":"` + canary + `"}`)
	a.DenyLocal(receipts.SHA256(result))
	d, err := a.Admit(cut.EventID, result, f.Target, f.Consumer)
	if err == nil || d.Admit {
		t.Fatalf("rehydrated result admitted")
	}
	dj, _ := json.Marshal(d)
	texts = append(texts, err.Error(), string(dj))
	forbidden = append(forbidden, receipts.SHA256(result))

	// Seal an export with the value left in, whatever the verification says.
	lf := newFixture()
	lf.Export = leaky
	req := lf.build(t)
	req.Verification.Verdict = "fail"
	if _, err := a.SealUnverified(req); err == nil {
		t.Fatalf("leaky export sealed")
	} else {
		texts = append(texts, err.Error())
	}

	journal, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(journal))
	for _, s := range texts {
		for _, bad := range forbidden {
			if strings.Contains(s, bad) {
				t.Errorf("output holds the canary or a digest of unsealed bytes: %q", bad)
			}
		}
	}
	if n := len(readJournal(t, path)); n != 5 {
		t.Errorf("journal has %d lines, want 5 (seal and 4 refusals)", n)
	}
}

// An admission the journal cannot record is not made and consumes no use.
func TestAdmitFailsClosedWithoutJournal(t *testing.T) {
	a, path := setup(t, &clock{t0})
	f := newFixture()
	f.MaxUses = 1
	cut := mustSeal(t, a, f.build(t))

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil { // the journal cannot be opened for writing
		t.Fatal(err)
	}
	d, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
	if err == nil || d.Admit {
		t.Fatalf("admitted without a journal: %+v", d)
	}
	var e *egress.Error
	if errors.As(err, &e) {
		t.Errorf("journal failure reported as a refusal: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "egress: ") || !strings.Contains(err.Error(), "not admitted") {
		t.Errorf("error %q", err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	d, err = a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer)
	if err != nil || !d.Admit || d.Use != 1 {
		t.Fatalf("after the journal is back: admit %v use %d err %v", d.Admit, d.Use, err)
	}
}

// A seal the journal cannot record is not made, and a refusal the journal
// cannot record is still a refusal.
func TestSealFailsClosedWithoutJournal(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j := egress.OpenJournal(filepath.Join(notDir, "journal.jsonl"))
	a := egress.NewAuthority(egress.Options{Journal: j, Now: (&clock{t0}).now, PolicyRevision: policy})
	f := newFixture()
	req := f.build(t)
	cut, err := a.SealUnverified(req)
	if err == nil || cut.EventID != "" {
		t.Fatalf("sealed without a journal")
	}
	if !strings.HasPrefix(err.Error(), "egress: seal not recorded") {
		t.Errorf("error %q", err)
	}
	req.Verification.Verdict = "fail"
	_, err = a.SealUnverified(req)
	if e := asError(t, err); e.Reason != "verdict" || !strings.Contains(err.Error(), "refusal not recorded") {
		t.Errorf("refusal with broken journal: %v", err)
	}
}

// Without a journal the authority still decides.
func TestNoJournal(t *testing.T) {
	a := egress.NewAuthority(egress.Options{Now: (&clock{t0}).now, PolicyRevision: policy})
	f := newFixture()
	cut := mustSeal(t, a, f.build(t))
	if d, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer); err != nil || !d.Admit {
		t.Fatalf("Admit: %v", err)
	}
}
