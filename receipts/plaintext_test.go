package receipts

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"testing"
)

// TestPlaintextRedaction: owner values held as Plaintext (the planted key's
// bytes stand for one) show in no fmt verb, log or slog output, alone or in
// a struct, and no encoder takes them.
func TestPlaintextRedaction(t *testing.T) {
	p := Plaintext(plantedKey)
	// Exported fields only: fmt cannot call a method of an unexported field
	// and prints its bytes (see Plaintext).
	type holder struct {
		Name  string
		Value Plaintext
		Ptr   *Plaintext
	}
	h := holder{Name: "h", Value: p, Ptr: &p}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%08b", "% x", "%#x", "%T"}
	for _, operand := range []any{p, &p, h, &h, []any{p}, map[string]Plaintext{"k": p}, []Plaintext{p}} {
		for _, verb := range verbs {
			checkNoLeak(t, fmt.Sprintf("Sprintf(%s, %T)", verb, operand), fmt.Sprintf(verb, operand))
		}
		checkNoLeak(t, "Sprint", fmt.Sprint(operand))
	}
	checkNotEncoded(t, p, h, &h, map[string]any{"k": p})
	for _, m := range []func() ([]byte, error){p.MarshalText, p.MarshalBinary, p.GobEncode} {
		if _, err := m(); !errors.Is(err, ErrPlaintext) {
			t.Errorf("an encoder returned %v", err)
		}
	}
	var gobOut bytes.Buffer
	if err := gob.NewEncoder(&gobOut).Encode(h); err == nil {
		t.Error("gob encoded a Plaintext holder")
	}
	checkNoLeak(t, "gob", gobOut.String())
	var logs bytes.Buffer
	for _, hd := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
		slog.New(hd).Info("v", "v", p, "holder", h, "ptr", &h)
	}
	log.New(&logs, "", 0).Printf("%v %+v %s", p, h, p)
	checkNoLeak(t, "logs", logs.String())
	if !bytes.Contains(logs.Bytes(), []byte("REDACTED")) {
		t.Errorf("logs hold no redaction marker: %s", logs.String())
	}
	// The bytes themselves are there for code that asks for them.
	if string(p) != plantedKey || !bytes.Equal(p, []byte(plantedKey)) {
		t.Fatal("Plaintext lost its bytes")
	}
}
