package rehydrate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

const propSchemaDoc = `{"type":"object","additionalProperties":false,"required":["findings","people"],"properties":{
  "findings":{"type":"array","items":{"type":"object","required":["module","note"],"properties":{
    "module":{"type":"string","x-privacycut-rehydrate":{"category":"module","purpose":"triage","max":100000}},
    "team":{"type":"string","x-privacycut-rehydrate":{"category":"team","purpose":"triage","max":100000}},
    "hosts":{"type":"array","items":{"type":"string","x-privacycut-rehydrate":{"category":"host","purpose":"triage","max":100000}}},
    "note":{"type":"string"}}}},
  "people":{"type":"array","items":{"type":"string","x-privacycut-rehydrate":{"category":"person","purpose":"triage","max":100000}}}}}`

type propFinding struct {
	Module string   `json:"module"`
	Team   string   `json:"team,omitempty"`
	Hosts  []string `json:"hosts,omitempty"`
	Note   string   `json:"note"`
}

type propReturn struct {
	Findings []propFinding `json:"findings"`
	People   []string      `json:"people"`
}

// pieces values and prose are built from: JSON's escapes, multi-byte and
// astral characters, line separators, and token look-alikes.
var pieces = []string{"a", "Z", "/", ".", "-", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f",
	"é", "☃", "😀", "\u2028", "\ufeff", "<", "&", "pcv:", ":module:", "redacted:team:1"}

func randText(r *rand.Rand, maxPieces int) string {
	var b strings.Builder
	for n := 1 + r.IntN(maxPieces); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestRoundTripProperty: for random owner maps, a return that echoes every
// token at its marked paths rehydrates to exactly the values, and nothing
// else changes.
func TestRoundTripProperty(t *testing.T) {
	s := mustSchema(t, propSchemaDoc)
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		ns := make([]byte, nsLen)
		for i := range ns {
			ns[i] = "abcdefghijklmnopqrstuvwxyz234567"[r.IntN(32)]
		}
		lease := Lease{Namespace: string(ns), Purpose: "triage"}
		iss := newFake()
		// A random owner map: per category, distinct values and their tokens.
		owners := map[string][]string{} // category → tokens
		values := map[string]string{}   // token → value
		for _, cat := range []string{"module", "team", "host", "person"} {
			seen := map[string]bool{}
			for n := r.IntN(6); n > 0; n-- {
				v := randText(r, 12)
				if seen[v] {
					continue
				}
				seen[v] = true
				tok := iss.issue(lease.Namespace, cat, v)
				if _, dup := values[tok]; dup {
					t.Fatal("two values share a token")
				}
				owners[cat] = append(owners[cat], tok)
				values[tok] = v
			}
		}
		pick := func(cat string) string { return owners[cat][r.IntN(len(owners[cat]))] }
		var ret, want propReturn
		ret.People, want.People = []string{}, []string{}
		ret.Findings, want.Findings = []propFinding{}, []propFinding{}
		wantSubs := map[string]int{}
		for n := r.IntN(8); n > 0; n-- {
			if len(owners["module"]) == 0 {
				break
			}
			var f, w propFinding
			f.Module = pick("module")
			w.Module = values[f.Module]
			wantSubs["module"]++
			if len(owners["team"]) > 0 && r.IntN(2) == 0 {
				f.Team = pick("team")
				w.Team = values[f.Team]
				wantSubs["team"]++
			}
			for k := r.IntN(3); k > 0 && len(owners["host"]) > 0; k-- {
				h := pick("host")
				f.Hosts = append(f.Hosts, h)
				w.Hosts = append(w.Hosts, values[h])
				wantSubs["host"]++
			}
			// Prose may quote any token, or be long: it is never changed.
			f.Note = randText(r, 30) + " " + pick("module") + " " + randText(r, 5)
			w.Note = f.Note
			ret.Findings = append(ret.Findings, f)
			want.Findings = append(want.Findings, w)
		}
		for _, tok := range owners["person"] {
			ret.People = append(ret.People, tok)
			want.People = append(want.People, values[tok])
			wantSubs["person"]++
		}
		doc, err := json.MarshalIndent(ret, "", strings.Repeat(" ", r.IntN(3)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Rehydrate(doc, s, lease, iss)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		var got propReturn
		if err := canon.Unmarshal(res.Output, &got, canon.Options{}); err != nil {
			t.Fatalf("iteration %d: output unreadable: %v", iter, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d: output (-want +got):\n%s", iter, diff)
		}
		if diff := cmp.Diff(wantSubs, res.Substitutions); diff != "" {
			t.Fatalf("iteration %d: substitutions (-want +got):\n%s", iter, diff)
		}
		canonical, err := canon.Canonicalize(res.Output)
		if err != nil || string(canonical) != string(res.Output) {
			t.Fatalf("iteration %d: output not canonical", iter)
		}
		if res.FinalDigest != receipts.SHA256(res.Output) || res.ReturnDigest != receipts.SHA256(doc) {
			t.Fatalf("iteration %d: digests do not match", iter)
		}
	}
}

// checkOnlyTokensChanged walks a return and its output together and fails
// unless every differing string is an exact disclosed token of iss whose
// output is its value. It returns the number of substituted strings.
func checkOnlyTokensChanged(t testing.TB, in, out *canon.Value, iss *fakeIssued, path string) int {
	t.Helper()
	if in.Kind != out.Kind {
		t.Fatalf("%s: kind changed from %s to %s", path, in.Kind, out.Kind)
	}
	n := 0
	switch in.Kind {
	case canon.Object:
		if len(in.Members) != len(out.Members) {
			t.Fatalf("%s: member count changed", path)
		}
		for i := range in.Members {
			var match *canon.Value
			for j := range out.Members {
				if string(out.Members[j].Key) == string(in.Members[i].Key) {
					match = &out.Members[j].Value
				}
			}
			if match == nil {
				t.Fatalf("%s: a member lost its key", path)
			}
			n += checkOnlyTokensChanged(t, &in.Members[i].Value, match, iss, path+"."+string(in.Members[i].Key))
		}
	case canon.Array:
		if len(in.Elems) != len(out.Elems) {
			t.Fatalf("%s: length changed", path)
		}
		for i := range in.Elems {
			n += checkOnlyTokensChanged(t, &in.Elems[i], &out.Elems[i], iss, fmt.Sprintf("%s[%d]", path, i))
		}
	case canon.String:
		if string(in.Str) == string(out.Str) {
			return 0
		}
		e, ok := iss.m[string(in.Str)]
		if !ok || !e.disclosed || e.value != string(out.Str) {
			t.Fatalf("%s: a string that is not an exact disclosed token changed", path)
		}
		return 1
	default:
		if string(in.Num) != string(out.Num) && in.Kind == canon.Number {
			t.Fatalf("%s: number changed", path)
		}
	}
	return n
}
