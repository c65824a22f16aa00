//go:build linux && (amd64 || arm64 || riscv64)

package arena

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// holder is how secrets sit in real structs: exported and unexported fields.
type holder struct {
	Name   string
	Secret *Secret
	hidden *Secret
	Arena  *Arena
}

// TestRedaction is M4: a canary secret rendered through every formatter, fmt
// verb, struct embedding, encoder and slog handler leaves no canary form in
// the output, and every encoder refuses with an error.
func TestRedaction(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			a := newArena(t, 4096, k.force, 0)
			canary := []byte("M4-CANARY-" + randHex(t, 32))
			s, err := a.Alloc(len(canary))
			if err != nil {
				t.Fatal(err)
			}
			fill(t, s, canary)
			h := holder{Name: "h", Secret: s, hidden: s, Arena: a}

			var out []string
			add := func(parts ...string) { out = append(out, parts...) }
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "% x", "%08x", "%-40s", "%T", "%b", "%o", "%c", "%U", "%e", "%t"} {
				add(sprintf(verb, s), sprintf(verb, h), sprintf(verb, &h), sprintf(verb, []*Secret{s}),
					sprintf(verb, map[string]*Secret{"k": s}), sprintf(verb, a))
			}
			add(s.String(), s.GoString(), fmt.Sprint(s), fmt.Sprintln(s, h), fmt.Errorf("wrapped %v", s).Error())
			add(a.String(), a.GoString())

			// Encoders: every one must refuse, and its error text is output too.
			encoders := map[string]func(any) ([]byte, error){
				"json":   json.Marshal,
				"indent": func(v any) ([]byte, error) { return json.MarshalIndent(v, "", " ") },
				"xml":    xml.Marshal,
				"gob": func(v any) ([]byte, error) {
					var b bytes.Buffer
					err := gob.NewEncoder(&b).Encode(v)
					return b.Bytes(), err
				},
			}
			for name, enc := range encoders {
				for vname, v := range map[string]any{"secret": s, "holder": h, "slice": []*Secret{s}, "arena": a} {
					b, err := enc(v)
					if err == nil {
						t.Errorf("%s of %s succeeded: %q", name, vname, b)
						continue
					}
					add(string(b), err.Error())
				}
			}
			for _, m := range []func() ([]byte, error){s.MarshalJSON, s.MarshalText, s.MarshalBinary, a.MarshalJSON, a.MarshalText} {
				b, err := m()
				if err == nil || b != nil || !errors.Is(err, ErrEncode) {
					t.Errorf("marshal method = %q, %v; want nil, ErrEncode", b, err)
				}
			}

			// slog, both handlers, with the secret as attribute, inside a
			// struct, a slice and a group.
			var logs bytes.Buffer
			for _, hd := range []slog.Handler{
				slog.NewJSONHandler(&logs, &slog.HandlerOptions{AddSource: true}),
				slog.NewTextHandler(&logs, nil),
			} {
				l := slog.New(hd)
				l.Info("op", "secret", s, "holder", h, "ptr", &h, "list", []*Secret{s}, "arena", a,
					slog.Group("g", "secret", s), slog.Any("any", s), slog.String("str", s.String()))
				l.With("secret", s).Error("with", "err", fmt.Errorf("e: %v", s))
			}
			add(logs.String())
			if !strings.Contains(logs.String(), "REDACTED") {
				t.Error("slog output does not mention REDACTED: the handlers did not run the secret through LogValue")
			}

			joined := []byte(strings.Join(out, "\n"))
			if forms := leakForms(joined, canary); len(forms) != 0 {
				t.Errorf("canary leaked as %v", forms)
			}
			// Control: the same rendering of the bytes themselves leaks, so
			// the check above can fail.
			var ctl []string
			for _, verb := range []string{"%v", "%x", "%s", "%q"} {
				ctl = append(ctl, sprintf(verb, canary))
			}
			if forms := leakForms([]byte(strings.Join(ctl, "\n")), canary); len(forms) < 3 {
				t.Errorf("control rendering of the raw canary found only %v", forms)
			}
			if !s.EqualBytes(canary) {
				t.Error("rendering changed the secret")
			}
		})
	}
}

// TestRedactNil checks formatting a nil *Secret or *Arena neither panics nor
// prints anything but the redaction.
func TestRedactNil(t *testing.T) {
	var s *Secret
	var a *Arena
	got := []string{sprintf("%v", s), sprintf("%#v", s), sprintf("%v", a)}
	want := []string{"REDACTED", "REDACTED", "arena(nil)"}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("got %q, want %q", got[i], want[i])
		}
	}
	if err := s.Reveal(func([]byte) error { return nil }); !errors.Is(err, ErrInvalid) {
		t.Errorf("Reveal on nil = %v, want ErrInvalid", err)
	}
	s.Wipe()
}
