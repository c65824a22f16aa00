package seal

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
)

func newArena(t testing.TB) *arena.Arena {
	t.Helper()
	a, err := arena.New(256<<10, arena.Options{})
	if err != nil {
		t.Fatalf("arena: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func pairs() []Pair {
	return []Pair{
		{"module", []byte("git.corp.example/payments/ledger")},
		{"team", []byte("payments-core")},
		{"module", []byte("git.corp.example/payments/ledger/v2")},
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	a := newArena(t)
	kp, err := NewKeyPair(a)
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()
	req, err := Seal(kp.Public(), pairs())
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	for i, p := range pairs() {
		if bytes.Contains(req.Sealed, p.Value) {
			t.Errorf("value %d travels in clear", i)
		}
		if req.Category(i) != p.Category || int(req.Lengths[i]) != len(p.Value) {
			t.Errorf("value %d: category %q length %d", i, req.Category(i), req.Lengths[i])
		}
	}
	if len(req.Categories) != 2 {
		t.Errorf("categories %q, want the two distinct ones", req.Categories)
	}
	base := a.Used()
	s, err := kp.Open(a, req)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	var want []byte
	for _, p := range pairs() {
		want = append(want, p.Value...)
	}
	if !s.EqualBytes(want) {
		t.Error("the values opened to different bytes")
	}
	s.Wipe()
	if a.Used() != base {
		t.Errorf("arena use %d after wiping, want %d", a.Used(), base)
	}
	// Two requests to the same key use different ephemeral keys.
	req2, _ := Seal(kp.Public(), pairs())
	if req2.Ephemeral == req.Ephemeral || bytes.Equal(req2.Sealed, req.Sealed) {
		t.Errorf("two seals share an ephemeral key or ciphertext")
	}
	// No values: nothing to open, but the tag still binds the request.
	empty, err := Seal(kp.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := kp.Open(a, empty); s != nil || err != nil {
		t.Errorf("Open of no values: %v, %v", s, err)
	}
	empty.Sealed[0] ^= 1
	if _, err := kp.Open(a, empty); !errors.Is(err, ErrAuth) {
		t.Errorf("Open of no values with a bad tag: %v", err)
	}
}

func TestOpenRefusesTampering(t *testing.T) {
	a := newArena(t)
	kp, _ := NewKeyPair(a)
	defer kp.Close()
	other, _ := NewKeyPair(a)
	defer other.Close()
	tests := []struct {
		name   string
		mutate func(r *Request)
		want   error
		code   receipts.Code
		index  int
	}{
		{"flipped ciphertext bit", func(r *Request) { r.Sealed[3] ^= 1 }, ErrAuth, receipts.MalformedRecord, -1},
		{"flipped tag bit", func(r *Request) { r.Sealed[len(r.Sealed)-1] ^= 1 }, ErrAuth, receipts.MalformedRecord, -1},
		{"changed category", func(r *Request) { r.Index[1] = 0 }, ErrAuth, receipts.MalformedRecord, -1},
		{"renamed category", func(r *Request) { r.Categories[1] = "person" }, ErrAuth, receipts.MalformedRecord, -1},
		// Same length: only the category's bytes in the AAD tell them apart.
		{"renamed category, same length (team to host)", func(r *Request) { r.Categories[1] = "host" }, ErrAuth, receipts.MalformedRecord, -1},
		{"renamed category, same length (module to person)", func(r *Request) { r.Categories[0] = "person" }, ErrAuth, receipts.MalformedRecord, -1},
		{"swapped positions", func(r *Request) { r.Index[0], r.Index[1] = r.Index[1], r.Index[0] }, ErrAuth, receipts.MalformedRecord, -1},
		{"moved a boundary", func(r *Request) { r.Lengths[0]--; r.Lengths[1]++ }, ErrAuth, receipts.MalformedRecord, -1},
		{"dropped the last value", func(r *Request) {
			n := r.Lengths[2]
			r.Index, r.Lengths = r.Index[:2], r.Lengths[:2]
			r.Lengths[1] += n
		}, ErrAuth, receipts.MalformedRecord, -1},
		{"lengths do not add up", func(r *Request) { r.Lengths[2]++ }, ErrAuth, receipts.MalformedRecord, -1},
		{"truncated message", func(r *Request) { r.Sealed = r.Sealed[:16] }, ErrAuth, receipts.MalformedRecord, -1},
		{"other ephemeral key", func(r *Request) { r.Ephemeral = other.Public() }, ErrAuth, receipts.MalformedRecord, -1},
		{"foreign recipient", func(r *Request) { r.Recipient = other.Public() }, ErrKey, "", -1},
		{"low-order ephemeral key", func(r *Request) { r.Ephemeral = [KeySize]byte{} }, ErrKey, "", -1},
		{"category index out of range", func(r *Request) { r.Index[1] = 9 }, ErrLimit, receipts.MalformedRecord, 1},
		{"index and lengths differ", func(r *Request) { r.Lengths = r.Lengths[:2] }, ErrLimit, receipts.MalformedRecord, -1},
		{"an extra length", func(r *Request) { r.Lengths = append(r.Lengths, 5) }, ErrLimit, receipts.MalformedRecord, -1},
		{"an extra length and a category", func(r *Request) {
			r.Lengths = append(r.Lengths, 5)
			r.Categories = append(r.Categories, "file")
		}, ErrLimit, receipts.MalformedRecord, -1},
		{"empty value", func(r *Request) { r.Lengths[1] = 0 }, ErrEmpty, receipts.MalformedRecord, 1},
		{"value too long", func(r *Request) { r.Lengths[1] = MaxValueLen + 1 }, ErrLimit, receipts.LimitExceeded, 1},
		{"empty category", func(r *Request) { r.Categories[1] = "" }, ErrLimit, receipts.LimitExceeded, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Seal(kp.Public(), pairs())
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(&req)
			base := a.Used()
			s, err := kp.Open(a, req)
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Index != tc.index || e.Code != tc.code {
				t.Errorf("error %+v, want index %d code %q", e, tc.index, tc.code)
			}
			if a.Used() != base {
				t.Errorf("a refused open left %d bytes in the arena", a.Used()-base)
			}
			for _, p := range pairs() {
				if bytes.Contains([]byte(err.Error()), p.Value) {
					t.Errorf("error message holds a value")
				}
			}
		})
	}
}

func TestLimits(t *testing.T) {
	a := newArena(t)
	kp, _ := NewKeyPair(a)
	defer kp.Close()
	tooMany := make([]Pair, MaxValues+1)
	for i := range tooMany {
		tooMany[i] = Pair{"module", []byte("x")}
	}
	tooManyCats := make([]Pair, MaxCategories+1)
	for i := range tooManyCats {
		tooManyCats[i] = Pair{"c" + strconv.Itoa(i), []byte("x")}
	}
	tests := map[string]struct {
		pairs []Pair
		code  receipts.Code
	}{
		"too many values":     {tooMany, receipts.LimitExceeded},
		"too many categories": {tooManyCats, receipts.LimitExceeded},
		"value too long":      {[]Pair{{"module", make([]byte, MaxValueLen+1)}}, receipts.LimitExceeded},
		"empty value":         {[]Pair{{"module", nil}}, receipts.MalformedRecord},
		"long category":       {[]Pair{{string(make([]byte, MaxCategoryLen+1)), []byte("v")}}, receipts.LimitExceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Seal(kp.Public(), tc.pairs)
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code {
				t.Errorf("Seal: %v, want code %s", err, tc.code)
			}
		})
	}
	// The vault enforces the value count independently of the client.
	req, _ := Seal(kp.Public(), pairs())
	for len(req.Index) <= MaxValues {
		req.Index = append(req.Index, req.Index[0])
		req.Lengths = append(req.Lengths, req.Lengths[0])
	}
	if _, err := kp.Open(a, req); !errors.Is(err, ErrLimit) {
		t.Errorf("Open of too many values: %v", err)
	}
}

// TestExhaustionRefusesAndWipes opens more than the arena holds: a coded
// refusal, and nothing left behind.
func TestExhaustionRefusesAndWipes(t *testing.T) {
	a, err := arena.New(8<<10, arena.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	kp, err := NewKeyPair(a)
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()
	var ps []Pair
	for range 4 {
		ps = append(ps, Pair{"module", bytes.Repeat([]byte("v"), 3000)})
	}
	req, _ := Seal(kp.Public(), ps)
	base := a.Used()
	_, err = kp.Open(a, req)
	var ae *arena.Error
	if !errors.As(err, &ae) || ae.Code != receipts.LimitExceeded {
		t.Fatalf("Open past the arena: %v, want LIMIT_EXCEEDED", err)
	}
	if a.Used() != base {
		t.Errorf("refused open left %d bytes allocated", a.Used()-base)
	}
}
