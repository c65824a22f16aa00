package route

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

var update = flag.Bool("update", false, "regenerate the vectors in testdata")

// The vectors. generateVectors writes them with fixed randomness, using
// the note package and package canon directly, not this package's
// signing, so that TestVectors checks this package against them. Each is
// listed in testdata/vectors.txt with what Open or Check must say.
//
//	route.json               the route, as a reviewer writes it (indented)
//	reviewer.key/.vkey       the approving key pair (a test key)
//	route.note               route.json approved by reviewer
//	edited.note              route.note with max_uses raised in its text
//	untrusted.note/.vkey     the route approved by a key nobody trusts
//	unsigned.note            the route's text without a signature
//	noncanonical.note        route.json's indented text, signed by reviewer
//	collision.vkeys          two keys of one name and key hash
//	plan*.json               plans checked against route.note at vectorNow
const vectorDir = "testdata"

// vectorNow is when the plan vectors are checked.
var vectorNow = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// vector is one line of vectors.txt: a file, what is expected of it (ok or
// a refusal code) and the field named.
type vector struct{ file, expect, field string }

func vectorRoute() *receipts.Route {
	return &receipts.Route{
		Schema:   receipts.SchemaRoute,
		Name:     "payments-triage",
		Consumer: receipts.Consumer{Kind: "model", ID: "triage-bot"},
		Purpose:  "dependency-triage",
		Target:   "https://api.openai.example/v1/chat/completions",
		Mode:     receipts.ModeReversible,
		Wire: &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "gpt-test-1",
			Instruction: "You triage dependency findings.\nAnswer only in the schema.", MaxOutputTokens: 2048},
		Categories:         receipts.PlanCategories{Allowed: []string{"module", "package", "team"}, Prohibited: []string{"function", "file", "person", "host", "credential"}},
		VocabularyDigest:   "sha256:" + strings.Repeat("1", 64),
		OutputSchemaDigest: "sha256:" + strings.Repeat("2", 64),
		MaxUses:            3,
		MaxLifetimeS:       3600,
		ThreatModel:        "remote-model-honest-but-curious",
		Retention:          receipts.RetentionSession,
		RemoteDeadlineS:    600,
		ReturnWindowS:      3600,
		Station:            "local",
		MaxParents:         64,
	}
}

// vectorPlan is the plan of vectorRoute at vectorNow, written field by
// field (not by Instantiate).
func vectorPlan(r *receipts.Route, digest string) *receipts.Plan {
	w := *r.Wire
	return &receipts.Plan{
		Schema: receipts.SchemaPlan, Consumer: r.Consumer, Purpose: r.Purpose, Target: r.Target, Mode: r.Mode,
		ManifestDigest: "hmac-sha256:" + strings.Repeat("3", 64), RestrictedRef: "hmac-sha256:" + strings.Repeat("4", 64),
		Invariants:  []string{"preserve-diagnostics", "preserve-dependencies", "preserve-status", "preserve-citations", "preserve-order", "owner-equality"},
		ThreatModel: r.ThreatModel, Retention: r.Retention, MaxUses: r.MaxUses,
		Categories:       receipts.PlanCategories{Allowed: []string{"module", "package", "team"}, Prohibited: []string{"function", "file", "person", "host", "credential"}},
		VocabularyDigest: r.VocabularyDigest, MaxParents: r.MaxParents,
		ExpiresAt:       "2026-12-01T10:00:00Z",
		PolicyRevision:  "privacycut-policy/1",
		RemoteDeadlineS: r.RemoteDeadlineS, ReturnWindowS: r.ReturnWindowS, Station: r.Station,
		OutputSchemaDigest: r.OutputSchemaDigest, Wire: &w, RouteDigest: digest,
	}
}

func generateVectors(t *testing.T) {
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(vectorDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sign := func(text string, skey string) []byte {
		t.Helper()
		s, err := note.NewSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := note.Sign(&note.Note{Text: text}, s)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	r := vectorRoute()
	c, err := canon.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(c, &m); err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	indented = append(indented, '\n')
	write("route.json", indented)

	skey, vkey, err := note.GenerateKey(newFixedRand("vectors/reviewer"), "reviewer.example")
	if err != nil {
		t.Fatal(err)
	}
	write("reviewer.key", []byte(skey+"\n"))
	write("reviewer.vkey", []byte(vkey+"\n"))
	good := sign(string(c)+"\n", skey)
	write("route.note", good)
	edited := bytes.Replace(good, []byte(`"max_uses":3`), []byte(`"max_uses":9`), 1)
	if bytes.Equal(edited, good) {
		t.Fatal("edit did not apply")
	}
	write("edited.note", edited)
	uskey, uvkey, err := note.GenerateKey(newFixedRand("vectors/outsider"), "outsider.example")
	if err != nil {
		t.Fatal(err)
	}
	write("untrusted.vkey", []byte(uvkey+"\n"))
	write("untrusted.note", sign(string(c)+"\n", uskey))
	write("unsigned.note", append(append([]byte(nil), c...), '\n'))
	write("noncanonical.note", sign(string(indented), skey))
	write("collision.vkeys", []byte(strings.Join(collidingKeys(), "\n")+"\n"))

	digest := receipts.SHA256(c)
	plans := map[string]func(p *receipts.Plan){
		"plan.json":                 func(*receipts.Plan) {},
		"plan-expired.json":         func(p *receipts.Plan) { p.ExpiresAt = "2026-12-01T09:29:59Z" },
		"plan-over-lifetime.json":   func(p *receipts.Plan) { p.ExpiresAt = "2026-12-01T10:30:01Z" },
		"plan-edited-target.json":   func(p *receipts.Plan) { p.Target = "https://exfil.example/v1/chat/completions" },
		"plan-edited-consumer.json": func(p *receipts.Plan) { p.Consumer.ID = "other-bot" },
		"plan-edited-max-uses.json": func(p *receipts.Plan) { p.MaxUses = 100 },
		"plan-other-route.json":     func(p *receipts.Plan) { p.RouteDigest = "sha256:" + strings.Repeat("5", 64) },
	}
	for name, edit := range plans {
		p := vectorPlan(r, digest)
		edit(p)
		b, err := canon.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		write(name, append(b, '\n'))
	}
	list := []vector{
		{"route.note", "ok", "-"},
		{"edited.note", "PLAN_MISMATCH", "route"},
		{"untrusted.note", "PLAN_MISMATCH", "route"},
		{"unsigned.note", "PLAN_MISMATCH", "route"},
		{"noncanonical.note", "PLAN_MISMATCH", "route"},
		{"collision.vkeys", "PLAN_MISMATCH", "trust"},
		{"plan.json", "ok", "-"},
		{"plan-expired.json", "PLAN_MISMATCH", "expires_at"},
		{"plan-over-lifetime.json", "PLAN_MISMATCH", "expires_at"},
		{"plan-edited-target.json", "PLAN_MISMATCH", "target"},
		{"plan-edited-consumer.json", "PLAN_MISMATCH", "consumer"},
		{"plan-edited-max-uses.json", "PLAN_MISMATCH", "max_uses"},
		{"plan-other-route.json", "PLAN_MISMATCH", "route_digest"},
	}
	var b strings.Builder
	b.WriteString("# Route vectors: file, expected result (ok or a refusal code), field named.\n")
	b.WriteString("# Notes are opened trusting reviewer.vkey; plans are checked against\n")
	b.WriteString("# route.note at " + vectorNow.Format(time.RFC3339) + ". Regenerate: go test ./route -run TestVectors -update\n")
	for _, v := range list {
		b.WriteString(v.file + " " + v.expect + " " + v.field + "\n")
	}
	write("vectors.txt", []byte(b.String()))
}

// collidingKeys finds two Ed25519 verifier keys named "collide" whose
// 32-bit key hashes are equal (a birthday search over fixed seeds; about
// 15,000 keys).
func collidingKeys() []string {
	seen := map[uint32]string{}
	for i := uint64(0); ; i++ {
		var c [8]byte
		binary.BigEndian.PutUint64(c[:], i)
		seed := sha256.Sum256(append([]byte("collision"), c[:]...))
		pub := ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey)
		vk, err := note.NewEd25519VerifierKey("collide", pub)
		if err != nil {
			panic(err)
		}
		v, err := note.NewVerifier(vk)
		if err != nil {
			panic(err)
		}
		if other, ok := seen[v.KeyHash()]; ok {
			return []string{other, vk}
		}
		seen[v.KeyHash()] = vk
	}
}

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVectors opens every note vector and checks every plan vector as
// vectors.txt says, and approves route.json with reviewer.key to exactly
// route.note.
func TestVectors(t *testing.T) {
	if *update {
		generateVectors(t)
	}
	trust, err := NewTrust(ParseTrustList(readVector(t, "reviewer.vkey"))...)
	if err != nil {
		t.Fatal(err)
	}
	good, err := Open(readVector(t, "route.note"), trust)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(readVector(t, "vectors.txt")))
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("vectors.txt: %q", line)
		}
		v := vector{f[0], f[1], f[2]}
		n++
		t.Run(v.file, func(t *testing.T) {
			data := readVector(t, v.file)
			var err error
			switch {
			case strings.HasSuffix(v.file, ".note"):
				_, err = Open(data, trust)
			case strings.HasSuffix(v.file, ".vkeys"):
				_, err = NewTrust(ParseTrustList(data)...)
			default:
				var p receipts.Plan
				if err := canon.Unmarshal(data, &p, canon.Options{}); err != nil {
					t.Fatal(err)
				}
				err = Check(&p, good.Route, good.Digest, vectorNow)
			}
			if v.expect == "ok" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := wantRefusal(t, err, v.field)
			if string(e.Code) != v.expect {
				t.Fatalf("code %s, want %s", e.Code, v.expect)
			}
		})
	}
	if n < 13 {
		t.Fatalf("%d vectors", n)
	}

	// This package's signing gives the note package's note.
	k, err := ParseSignerKey(readVector(t, "reviewer.key"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Wipe()
	msg, err := Approve(k, readVector(t, "route.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(msg, readVector(t, "route.note")) {
		t.Fatalf("Approve(route.json) is not route.note:\n%s", msg)
	}
	// The untrusted note opens when its key is trusted: it is refused for
	// its key alone.
	ut, err := NewTrust(ParseTrustList(readVector(t, "untrusted.vkey"))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(readVector(t, "untrusted.note"), ut); err != nil {
		t.Fatalf("untrusted.note under its own key: %v", err)
	}
}
