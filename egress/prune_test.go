package egress_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/egress"
)

// TestAuthorityForgets: a long-lived authority holds only what is live. A
// released seal admits nothing more; seals past their expiry and
// local-only digests past their purge time are dropped.
func TestAuthorityForgets(t *testing.T) {
	clk := &clock{t0}
	a, _ := setup(t, clk)
	f := newFixture()
	released := mustSeal(t, a, f.build(t))
	a.Release(released.EventID)
	_, err := a.Admit(released.EventID, f.Export, f.Target, f.Consumer)
	var ee *egress.Error
	if !errors.As(err, &ee) || ee.Reason != egress.ReasonNoSeal {
		t.Fatalf("admission under a released seal: %v, want %q", err, egress.ReasonNoSeal)
	}

	g := newFixture()
	g.Export = []byte(strings.Replace(string(g.Export), "redacted:module:1", "redacted:package:1", 1))
	g.Expires = t0.Add(10 * time.Minute).Format(time.RFC3339)
	expiring := mustSeal(t, a, g.build(t))
	a.DenyLocalUntil("sha256:"+strings.Repeat("ab", 32), t0.Add(5*time.Minute))
	a.DenyLocal("sha256:" + strings.Repeat("cd", 32))
	if seals, denied := a.Live(); seals != 1 || denied != 2 {
		t.Fatalf("live: %d seals, %d denied; want 1 and 2", seals, denied)
	}

	// Past the expiry (and a prune interval), a new seal prunes the rest.
	clk.t = t0.Add(20 * time.Minute)
	h := newFixture()
	h.Export = []byte(strings.Replace(string(h.Export), "redacted:module:1", "redacted:file:1", 1))
	h.Expires = t0.Add(2 * time.Hour).Format(time.RFC3339)
	mustSeal(t, a, h.build(t))
	if seals, denied := a.Live(); seals != 1 || denied != 1 {
		t.Fatalf("after the expiry: %d seals, %d denied; want 1 (the new seal) and 1 (the one without a purge time)", seals, denied)
	}
	if _, err := a.Admit(expiring.EventID, g.Export, g.Target, g.Consumer); !errors.As(err, &ee) || ee.Reason != egress.ReasonNoSeal {
		t.Fatalf("admission under an expired, pruned seal: %v", err)
	}
}
