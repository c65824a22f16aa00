package lease

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/lease.golden.json")

func TestJSONRoundTrip(t *testing.T) {
	var leases []Lease
	leases = append(leases, mustNew(t))
	for _, s := range States() {
		leases = append(leases, inState(t, s))
	}
	leases = append(leases, history(t)...)
	for _, l := range leases {
		t.Run(l.State.String(), func(t *testing.T) {
			b, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			var back Lease
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(l, back); d != "" {
				t.Fatalf("round trip (-want +got):\n%s", d)
			}
			if err := back.Check(); err != nil {
				t.Fatal(err)
			}
			if err := Forward(l, back); err != nil {
				t.Fatal(err)
			}
			if (l.ClaimedBy == nil) == bytes.Contains(b, []byte(`"claim":`)) {
				t.Fatalf("claim presence not kept: %s", b)
			}
		})
	}
}

func TestGolden(t *testing.T) {
	h := history(t)
	l := h[len(h)-1]
	got, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "lease.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Fatalf("golden mismatch (-file +got), rerun with -update if intended:\n%s", d)
	}
	var back Lease
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(l, back); d != "" {
		t.Fatalf("golden decodes to another lease (-want +got):\n%s", d)
	}
	if back.State != Consumed || back.Seq != 4 || !back.KeyDestroyed || back.NeedsKeyDestruction() {
		t.Fatalf("golden lease: state %v seq %d key_destroyed %v", back.State, back.Seq, back.KeyDestroyed)
	}
}

func TestStateText(t *testing.T) {
	for _, s := range States() {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != s.String() {
			t.Errorf("MarshalText(%v) = %q", s, b)
		}
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("UnmarshalText(%q) = %v, %v", b, back, err)
		}
	}
	wantNames := []string{"ACTIVE", "CLAIMED", "CONSUMED", "EXPIRED", "REVOKED"}
	var gotNames []string
	for _, s := range States() {
		gotNames = append(gotNames, s.String())
		if s.Terminal() != (s == Consumed || s == Expired || s == Revoked) {
			t.Errorf("%v.Terminal() = %v", s, s.Terminal())
		}
	}
	if d := cmp.Diff(wantNames, gotNames); d != "" {
		t.Errorf("state names (-want +got):\n%s", d)
	}
	for _, s := range []State{StateUnknown, State(6), State(255)} {
		if _, err := s.MarshalText(); err == nil {
			t.Errorf("MarshalText(%v) succeeded", s)
		}
		if s.Terminal() || s.Valid() {
			t.Errorf("%v is valid or terminal", s)
		}
	}
	if StateUnknown.String() != "UNKNOWN" || State(7).String() != "State(7)" {
		t.Errorf("illegal state names: %q %q", StateUnknown.String(), State(7).String())
	}
	for _, name := range []string{"", "active", " ACTIVE", "ACTIVE ", "UNKNOWN", "State(1)"} {
		var s State
		if err := s.UnmarshalText([]byte(name)); err == nil {
			t.Errorf("UnmarshalText(%q) = %v", name, s)
		}
		if s != StateUnknown {
			t.Errorf("failed UnmarshalText(%q) set %v", name, s)
		}
	}
	// A lease in an illegal state cannot be written.
	l := inState(t, Active)
	l.State = StateUnknown
	if _, err := json.Marshal(l); err == nil {
		t.Error("json.Marshal wrote a lease in an illegal state")
	}
	// Events and outcomes print their names.
	var evNames []string
	for _, ev := range Events() {
		evNames = append(evNames, ev.String())
	}
	if d := cmp.Diff([]string{"claim", "consume", "revoke", "expire"}, evNames); d != "" {
		t.Errorf("event names (-want +got):\n%s", d)
	}
	if EventUnknown.String() != "Event(0)" || OutcomeAlreadyClaimed.String() != "already-claimed" || OutcomeClaimed.String() != "claimed" || OutcomeNone.String() != "none" || Outcome(5).String() != "Outcome(5)" {
		t.Error("event or outcome names wrong")
	}
}
