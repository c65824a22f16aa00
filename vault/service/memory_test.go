package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// liveKeys is what the arena holds between requests: the epoch key, the
// backup key and the vault's X25519 private key, one 64-byte slot each,
// first fit.
const liveKeys = 3 * arena.DefaultSlotSize

// TestArenaZeroAfterUse is M3: after a grant, a map operation and a
// terminal transition, every arena byte outside the two long-lived keys
// reads zero, and the slots that held the map read zero once WithMap
// returns.
func TestArenaZeroAfterUse(t *testing.T) {
	v := newEnv(t).open(t)
	a := v.arena
	size := a.Size()
	if a.Used() != liveKeys || a.IsZero(0, liveKeys) {
		t.Fatalf("arena before any request: %d bytes used, keys zero %v", a.Used(), a.IsZero(0, liveKeys))
	}
	ps, _ := pairsOf("m3", 5)
	res := grant(t, v, ps)
	if a.Used() != liveKeys || !a.IsZero(liveKeys, size-liveKeys) {
		t.Fatalf("after a grant: %d bytes used, rest zero %v", a.Used(), a.IsZero(liveKeys, size-liveKeys))
	}
	bind(t, v, res)
	var off, n int
	err := v.WithMap(ctx, res.Lease.ID, func(m *Map) error {
		off, n = m.slots()
		if a.IsZero(off, n) {
			t.Errorf("the map's slots read zero while it is open (the check cannot fail)")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !a.IsZero(off, n) || !a.IsZero(liveKeys, size-liveKeys) {
		t.Errorf("map slots not zero after WithMap returned")
	}
	ret := digest("sha256:")
	if _, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Consume(ctx, principal, res.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if a.Used() != liveKeys || !a.IsZero(liveKeys, size-liveKeys) {
		t.Errorf("after the terminal transition: %d bytes used, rest zero %v", a.Used(), a.IsZero(liveKeys, size-liveKeys))
	}
	// A failing callback still wipes.
	r2 := grant(t, v, ps)
	boom := errors.New("callback failed")
	if err := v.WithMap(ctx, r2.Lease.ID, func(m *Map) error { off, n = m.slots(); return boom }); !errors.Is(err, boom) {
		t.Fatalf("WithMap: %v", err)
	}
	if !a.IsZero(off, n) {
		t.Errorf("map slots not zero after a failing callback")
	}
}

// TestMapRedacts is M4: the map prints as REDACTED under every verb and
// logger, refuses encoding, and nothing carries a value.
func TestMapRedacts(t *testing.T) {
	v := newEnv(t).open(t)
	ps, vals := pairsOf("m4", 3)
	res := grant(t, v, ps)
	err := v.WithMap(ctx, res.Lease.ID, func(m *Map) error {
		holder := struct {
			M    *Map
			Name string
		}{m, "holder"}
		var out bytes.Buffer
		for _, verb := range []string{"%v", "%+v", "%#v", "%x", "%X", "%q", "%s", "%d", "%10.3v"} {
			fmt.Fprintf(&out, verb+"|", m)
			fmt.Fprintf(&out, verb+"|", holder)
			fmt.Fprintf(&out, verb+"|", &holder)
		}
		fmt.Fprint(&out, m, holder)
		fmt.Fprintln(&out, m, holder)
		slog.New(slog.NewJSONHandler(&out, nil)).Info("m", "map", m, "holder", holder)
		slog.New(slog.NewTextHandler(&out, nil)).Info("m", "map", m, "holder", holder)
		if hits := vaulttest.Find(out.Bytes(), vals); len(hits) > 0 {
			t.Errorf("formatted output holds values %v", hits)
		}
		if !bytes.Contains(out.Bytes(), []byte("REDACTED")) {
			t.Errorf("no REDACTED in the output (the check cannot fail)")
		}
		if b, err := json.Marshal(m); err == nil {
			t.Errorf("json.Marshal of the map succeeded: %s", b)
		}
		if b, err := json.Marshal(holder); err == nil {
			t.Errorf("json.Marshal of a struct holding the map succeeded: %s", b)
		}
		if _, err := m.MarshalText(); err == nil {
			t.Errorf("MarshalText succeeded")
		}
		if _, err := m.MarshalBinary(); err == nil {
			t.Errorf("MarshalBinary succeeded")
		}
		// The token list is public; the values are not in it.
		toks, _ := m.Tokens()
		if hits := vaulttest.Find([]byte(fmt.Sprint(toks)), vals); len(hits) > 0 {
			t.Errorf("tokens hold values")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%v %+v %#v", v, v, v)
	infos, _ := v.List(ctx)
	b, _ := json.Marshal(infos)
	out.Write(b)
	if hits := vaulttest.Find(out.Bytes(), vals); len(hits) > 0 {
		t.Errorf("vault or lease output holds values %v", hits)
	}
}

// TestArenaExhaustion is P7 in process: a grant larger than the arena is
// refused with LIMIT_EXCEEDED, the arena is back where it was, and the
// call did not allocate anything near the payload on the heap.
func TestArenaExhaustion(t *testing.T) {
	e := newEnv(t)
	e.opt.ArenaSize = 64 << 10
	v := e.open(t)
	const each, n = 20 << 10, 4 // 80 KiB of values for a 64 KiB arena
	var ps []seal.Pair
	var vals [][]byte
	for i := range n {
		c := append(canary(fmt.Sprint("p7-", i)), bytes.Repeat([]byte{'x'}, each)...)
		vals = append(vals, c)
		ps = append(ps, seal.Pair{Category: "module", Value: c})
	}
	req := request(t, v, ps)
	base := v.arena.Used()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := v.CreateLease(ctx, principal, req)
	runtime.ReadMemStats(&after)
	wantCode(t, err, receipts.LimitExceeded)
	if v.arena.Used() != base || !v.arena.IsZero(base, v.arena.Size()-base) {
		t.Errorf("the refused grant left the arena at %d bytes (was %d) or not zero", v.arena.Used(), base)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > each {
		t.Errorf("the refused grant allocated %d heap bytes (payload %d)", grew, each*n)
	}
	if hits := vaulttest.Find([]byte(err.Error()), vals); len(hits) > 0 {
		t.Errorf("the error holds a value")
	}
	// A grant that fits still works afterwards.
	ok, _ := pairsOf("p7ok", 2)
	grant(t, v, ok)
}
