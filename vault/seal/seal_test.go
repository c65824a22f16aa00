package seal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
)

func newArena(t *testing.T) *arena.Arena {
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
	for i, v := range req.Values {
		if bytes.Contains(v.Ciphertext, pairs()[i].Value) {
			t.Errorf("value %d travels in clear", i)
		}
	}
	base := a.Used()
	secrets, err := kp.Open(a, req)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for i, s := range secrets {
		if !s.EqualBytes(pairs()[i].Value) {
			t.Errorf("value %d opened to different bytes", i)
		}
		s.Wipe()
	}
	if a.Used() != base {
		t.Errorf("arena use %d after wiping, want %d", a.Used(), base)
	}
	// Two requests to the same key use different ephemeral keys.
	req2, _ := Seal(kp.Public(), pairs())
	if req2.Ephemeral == req.Ephemeral || bytes.Equal(req2.Values[0].Ciphertext, req.Values[0].Ciphertext) {
		t.Errorf("two seals share an ephemeral key or ciphertext")
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
		index  int
	}{
		{"flipped ciphertext bit", func(r *Request) { r.Values[1].Ciphertext[0] ^= 1 }, ErrAuth, 1},
		{"changed category", func(r *Request) { r.Values[1].Category = "person" }, ErrAuth, 1},
		{"swapped positions", func(r *Request) { r.Values[0], r.Values[2] = r.Values[2], r.Values[0] }, ErrAuth, 0},
		{"dropped first value", func(r *Request) { r.Values = r.Values[1:] }, ErrAuth, 0},
		{"other ephemeral key", func(r *Request) { r.Ephemeral = other.Public() }, ErrAuth, 0},
		{"foreign recipient", func(r *Request) { r.Recipient = other.Public() }, ErrKey, -1},
		{"low-order ephemeral key", func(r *Request) { r.Ephemeral = [KeySize]byte{} }, ErrKey, -1},
		{"truncated ciphertext", func(r *Request) { r.Values[2].Ciphertext = r.Values[2].Ciphertext[:16] }, ErrAuth, 2},
		{"empty category", func(r *Request) { r.Values[1].Category = "" }, ErrLimit, 1},
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
			if !errors.As(err, &e) || e.Index != tc.index {
				t.Errorf("error index %+v, want %d", e, tc.index)
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
	tests := map[string]struct {
		pairs []Pair
		code  receipts.Code
	}{
		"too many values": {tooMany, receipts.LimitExceeded},
		"value too long":  {[]Pair{{"module", make([]byte, MaxValueLen+1)}}, receipts.LimitExceeded},
		"empty value":     {[]Pair{{"module", nil}}, receipts.MalformedRecord},
		"long category":   {[]Pair{{string(make([]byte, MaxCategoryLen+1)), []byte("v")}}, receipts.LimitExceeded},
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
	for len(req.Values) <= MaxValues {
		req.Values = append(req.Values, req.Values[0])
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
