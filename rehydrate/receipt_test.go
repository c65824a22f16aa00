package rehydrate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestRetentionMax(t *testing.T) {
	for _, c := range []struct {
		profile string
		want    time.Duration
		err     error
	}{
		{"no-retention", time.Hour, nil},
		{"session", 24 * time.Hour, nil},
		{"short", 7 * 24 * time.Hour, nil},
		{"none", 0, ErrUnknownRetention},
		{"Session", 0, ErrUnknownRetention},
		{"", 0, ErrUnknownRetention},
	} {
		got, err := RetentionMax(c.profile)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("RetentionMax(%q) = %v, %v; want %v, %v", c.profile, got, err, c.want, c.err)
		}
	}
}

// rehydrated returns a real Result over the fixture, and the fixture.
func rehydrated(t *testing.T) (Result, *fixture) {
	t.Helper()
	f := newFixture()
	doc := `{"findings":[{"owner_module":` + jq(f.mod) + `,"owner_team":` + jq(f.team) + `}],"owners":[` + jq(f.person) + `]}`
	res, err := Rehydrate([]byte(doc), mustSchema(t, testSchemaDoc), testLease, f.iss)
	if err != nil {
		t.Fatal(err)
	}
	return res, f
}

func validInput(res Result) ReceiptInput {
	return ReceiptInput{
		CutEvent:         "evt:aebagbafaydqqcikbmga2dqpca",
		Lease:            "pcl:aebagbafaydqqcikbmga2dqpca",
		Result:           res,
		VerifierRevision: "verifier/1",
		PolicyRevision:   "privacycut-policy/1",
		LabelDigest:      "hmac-sha256:" + strings.Repeat("ab", 32),
		SourceExpiry:     t0.Add(30 * 24 * time.Hour),
		CutExpiry:        t0.Add(10 * 24 * time.Hour),
		Retention:        "session",
		Now:              t0,
		// The digest of the schema the rehydration used.
		OutputSchemaDigest: "sha256:" + strings.Repeat("cd", 32),
	}
}

func TestNewReceipt(t *testing.T) {
	res, f := rehydrated(t)
	in := validInput(res)
	got, err := NewReceipt(in)
	if err != nil {
		t.Fatal(err)
	}
	want := receipts.RehydrationReceipt{
		Schema:             "RehydrationReceipt@1",
		CutEvent:           in.CutEvent,
		Lease:              in.Lease,
		ReturnDigest:       res.ReturnDigest,
		FinalDigest:        res.FinalDigest,
		Substitutions:      map[string]int{"module": 1, "team": 1, "person": 1},
		VerifierRevision:   "verifier/1",
		PolicyRevision:     "privacycut-policy/1",
		LabelDigest:        in.LabelDigest,
		PurgeAt:            "2030-01-03T03:04:05Z",
		RehydratedAt:       "2030-01-02T03:04:05Z",
		OutputSchemaDigest: in.OutputSchemaDigest,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	b, err := canon.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, "receipt", string(b), f.secrets...)
	assertNoSecrets(t, "receipt", string(b), testNS, string(res.Output))
	// The receipt's map is its own.
	res.Substitutions["module"] = 99
	if got.Substitutions["module"] != 1 {
		t.Error("the receipt shares the result's map")
	}
}

func TestReceiptPurgeAt(t *testing.T) {
	res, _ := rehydrated(t)
	local := time.FixedZone("UTC+5", 5*3600)
	for _, c := range []struct {
		name        string
		source, cut time.Duration
		retention   string
		want        string
	}{
		{"retention bounds", 30 * 24 * time.Hour, 10 * 24 * time.Hour, "no-retention", "2030-01-02T04:04:05Z"},
		{"session retention", 30 * 24 * time.Hour, 10 * 24 * time.Hour, "session", "2030-01-03T03:04:05Z"},
		{"short retention", 30 * 24 * time.Hour, 10 * 24 * time.Hour, "short", "2030-01-09T03:04:05Z"},
		{"cut expiry bounds", 30 * 24 * time.Hour, 3 * time.Hour, "short", "2030-01-02T06:04:05Z"},
		{"source expiry bounds", 90 * time.Minute, 3 * time.Hour, "short", "2030-01-02T04:34:05Z"},
		{"sub-second", time.Second + 5*time.Millisecond, time.Hour, "session", "2030-01-02T03:04:06.005Z"},
	} {
		in := validInput(res)
		in.SourceExpiry = t0.Add(c.source).In(local)
		in.CutExpiry = t0.Add(c.cut)
		in.Retention = c.retention
		in.Now = t0.In(local)
		got, err := NewReceipt(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.PurgeAt != c.want || got.RehydratedAt != "2030-01-02T03:04:05Z" {
			t.Errorf("%s: purge_at %s rehydrated_at %s, want %s", c.name, got.PurgeAt, got.RehydratedAt, c.want)
		}
	}
}

func TestNewReceiptRefuses(t *testing.T) {
	res, f := rehydrated(t)
	for _, c := range []struct {
		name string
		edit func(*ReceiptInput)
		want error
	}{
		{"unknown retention", func(in *ReceiptInput) { in.Retention = "forever" }, ErrUnknownRetention},
		{"empty cut event", func(in *ReceiptInput) { in.CutEvent = "" }, ErrReceiptInput},
		{"token as cut event", func(in *ReceiptInput) { in.CutEvent = f.mod }, ErrReceiptInput},
		{"token inside cut event", func(in *ReceiptInput) { in.CutEvent = "evt:" + f.mod }, ErrReceiptInput},
		{"value as cut event", func(in *ReceiptInput) { in.CutEvent = canaryPerson }, ErrReceiptInput},
		{"token as verifier revision", func(in *ReceiptInput) { in.VerifierRevision = f.team }, ErrReceiptInput},
		{"text as policy revision", func(in *ReceiptInput) { in.PolicyRevision = "policy one" }, ErrReceiptInput},
		{"namespace as lease", func(in *ReceiptInput) { in.Lease = testNS }, ErrReceiptInput},
		{"token as lease", func(in *ReceiptInput) { in.Lease = f.mod }, ErrReceiptInput},
		{"plain label digest", func(in *ReceiptInput) { in.LabelDigest = "sha256:" + strings.Repeat("ab", 32) }, ErrReceiptInput},
		{"value as label digest", func(in *ReceiptInput) { in.LabelDigest = canaryModule }, ErrReceiptInput},
		{"keyed return digest", func(in *ReceiptInput) { in.Result.ReturnDigest = in.LabelDigest }, ErrReceiptInput},
		{"missing final digest", func(in *ReceiptInput) { in.Result.FinalDigest = "" }, ErrReceiptInput},
		{"missing schema digest", func(in *ReceiptInput) { in.OutputSchemaDigest = "" }, ErrReceiptInput},
		{"keyed schema digest", func(in *ReceiptInput) { in.OutputSchemaDigest = in.LabelDigest }, ErrReceiptInput},
		{"token as substitution category", func(in *ReceiptInput) { in.Result.Substitutions = map[string]int{f.mod: 1} }, ErrReceiptInput},
		{"credential substitutions", func(in *ReceiptInput) { in.Result.Substitutions = map[string]int{"credential": 1} }, ErrReceiptInput},
		{"negative count", func(in *ReceiptInput) { in.Result.Substitutions = map[string]int{"module": -1} }, ErrReceiptInput},
		{"zero now", func(in *ReceiptInput) { in.Now = time.Time{} }, ErrReceiptInput},
		{"zero source expiry", func(in *ReceiptInput) { in.SourceExpiry = time.Time{} }, ErrReceiptInput},
		{"zero cut expiry", func(in *ReceiptInput) { in.CutExpiry = time.Time{} }, ErrReceiptInput},
		{"source expired", func(in *ReceiptInput) { in.SourceExpiry = t0 }, ErrPurgeElapsed},
		{"cut expired", func(in *ReceiptInput) { in.CutExpiry = t0.Add(-time.Second) }, ErrPurgeElapsed},
		{"evidence key with foreign output", func(in *ReceiptInput) {
			k, _ := receipts.NewEvidenceKey(make([]byte, 32))
			in.EvidenceKey = k
			in.Result.Output = []byte("{}")
		}, ErrReceiptInput},
	} {
		in := validInput(res)
		c.edit(&in)
		got, err := NewReceipt(in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if !cmp.Equal(got, receipts.RehydrationReceipt{}) {
			t.Errorf("%s: a refused input produced a receipt", c.name)
		}
		assertNoSecrets(t, c.name, err.Error(), f.secrets...)
	}
}

func TestNewReceiptKeyedFinalDigest(t *testing.T) {
	res, f := rehydrated(t)
	k, err := receipts.NewEvidenceKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	in := validInput(res)
	in.EvidenceKey = k
	got, err := NewReceipt(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := k.HMAC(res.Output); got.FinalDigest != want || !strings.HasPrefix(want, receipts.PrefixHMAC) {
		t.Errorf("final_digest = %s, want the keyed digest %s", got.FinalDigest, want)
	}
	b, _ := canon.Marshal(got)
	assertNoSecrets(t, "receipt", string(b), f.secrets...)
}

// TestApplyKeyed: the digests ApplyKeyed computes beside the writing, over
// an output of many hashStep pieces, are those of the whole output; a
// receipt built from its result with the same key equals one built by
// hashing the output again; with another key NewReceipt hashes again under
// that key.
func TestApplyKeyed(t *testing.T) {
	s := mustSchema(t, benchSchemaDoc)
	ret, fake := benchReturn(t, 6*hashStep+hashStep/3)
	k, err := receipts.NewEvidenceKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	other, err := receipts.NewEvidenceKey([]byte(strings.Repeat("o", 32)))
	if err != nil {
		t.Fatal(err)
	}
	r := ParseReturn(ret)
	if r.Digest() != receipts.SHA256(ret) {
		t.Fatalf("ParseReturn digest = %s, want the return's", r.Digest())
	}
	p, err := r.Validate(s, testLease, fake)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyKeyed(fake, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ApplyKeyed with no key = %v, want ErrInvalidArgument", err)
	}
	res, err := p.ApplyKeyed(fake, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) < 4*hashStep {
		t.Fatalf("output of %d bytes does not span several pieces", len(res.Output))
	}
	if res.FinalDigest != receipts.SHA256(res.Output) {
		t.Errorf("FinalDigest = %s, want the output's %s", res.FinalDigest, receipts.SHA256(res.Output))
	}
	if res.keyed != k.HMAC(res.Output) || res.keyedWith != k {
		t.Errorf("keyed digest = %s under %p, want %s under %p", res.keyed, res.keyedWith, k.HMAC(res.Output), k)
	}
	plain, err := p.Apply(fake)
	if err != nil {
		t.Fatal(err)
	}
	if plain.keyed != "" || plain.keyedWith != nil || string(plain.Output) != string(res.Output) {
		t.Error("Apply differs from ApplyKeyed beyond the keyed digest")
	}
	for _, c := range []struct {
		name string
		res  Result
		key  *receipts.EvidenceKey
	}{
		{"ApplyKeyed, same key", res, k},
		{"Apply", plain, k},
		{"ApplyKeyed, another key", res, other},
	} {
		in := validInput(c.res)
		in.EvidenceKey = c.key
		got, err := NewReceipt(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := c.key.HMAC(res.Output); got.FinalDigest != want {
			t.Errorf("%s: final_digest = %s, want %s", c.name, got.FinalDigest, want)
		}
	}
}
