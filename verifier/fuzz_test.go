package verifier

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
)

// FuzzRecognizer: the recognizer never panics, and when it accepts a text
// its spans tile the text exactly: contiguous, non-empty, in order, from
// the first byte to the last.
func FuzzRecognizer(f *testing.F) {
	seeds := []string{
		dep + "\n",
		"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"a\" owner.team=\"x \\\"y\\\" \\\\ z\"\n",
		"ask triage.explain owner.host=\"h\"\nask triage.explain\n",
		"ask triage.explain owner.host=\"redacted:host:1\"\n",
		"hello\n", "", "\n", "ask", dep + " owner.module=\"\xff\"\n", dep + " owner.module=\"a\\",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	voc := testVocabulary(f)
	f.Fuzz(func(t *testing.T, text []byte, tokens bool) {
		r := newRecognizer(voc, tokens)
		r.maxRecord = 256 // exercise the limit path on small inputs
		r.maxOwners = 4
		var spans []span
		accepted := true
		next := 0
		for pos := 0; pos < len(text); {
			start := pos
			var ref *refusal
			spans, pos, ref = r.record(text, pos, spans[:0])
			if pos <= start || pos > len(text) {
				t.Fatalf("no progress: %d -> %d", start, pos)
			}
			if ref != nil {
				accepted = false
				if ref.off < start || ref.off+ref.length > len(text) || ref.length < 0 {
					t.Fatalf("refusal out of range: %+v in [%d,%d)", ref, start, len(text))
				}
				if !ref.code.Valid() {
					t.Fatalf("invalid code %q", ref.code)
				}
				next = pos
				continue
			}
			for _, s := range spans {
				if s.start != next || s.end <= s.start {
					t.Fatalf("spans do not tile: span [%d,%d) at %d", s.start, s.end, next)
				}
				next = s.end
			}
			if next != pos || text[pos-1] != '\n' {
				t.Fatalf("record [%d,%d) ends at %d", start, pos, next)
			}
		}
		if accepted && next != len(text) {
			t.Fatalf("accepted text tiled to %d of %d", next, len(text))
		}
		if accepted && len(text) > 0 && !bytes.HasSuffix(text, []byte("\n")) {
			t.Fatal("accepted a text without its final LF")
		}
	})
}

// FuzzVerifyExport mutates the export of an honest irreversible cut. In
// irreversible mode the export is fully determined by the source, so a
// passing verdict for any other export bytes is a verifier bug.
func FuzzVerifyExport(f *testing.F) {
	base := makeCut(f, sampleParts, cutOptions{})
	f.Add(base.Export, true)
	f.Add(bytes.Replace(base.Export, []byte("redacted:module:1"), []byte("git.corp.example/pay/ledger"), 1), true)
	f.Add(bytes.Replace(base.Export, []byte("redacted:team:1"), []byte("redacted:team:2"), 1), false)
	f.Fuzz(func(t *testing.T, export []byte, rebind bool) {
		req := base
		req.Export = export
		if rebind {
			req.ExportDigest = receipts.SHA256(export)
		}
		v := verify(req)
		if v.Verdict == receipts.VerdictPass && !bytes.Equal(export, base.Export) {
			t.Fatalf("a different export passed")
		}
	})
}

// FuzzSkeletonDiff: skeletonDiff, which compares the bytes between two
// values in one piece, finds the span that a span-by-span comparison finds,
// for any two records the recognizers accept.
func FuzzSkeletonDiff(f *testing.F) {
	src := "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"a\" owner.team=\"x \\\"y\\\" \\\\ z\"\n"
	for _, s := range [][2]string{
		{src, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"redacted:module:1\" owner.team=\"redacted:team:1\"\n"},
		{src, "finding GO-2023-2102 golang.org/x/net@v0.17.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"redacted:module:1\" owner.team=\"redacted:team:1\"\n"},
		{src, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.team=\"redacted:team:1\" owner.module=\"redacted:module:1\"\n"},
		{"ask triage.explain owner.host=\"h\"\n", "ask triage.explain owner.host=\"redacted:host:1\" owner.host=\"redacted:host:2\"\n"},
		{"ask triage.explain owner.host=\"h\"\n", "ask triage.explain\n"},
		{dep + "\n", dep + "\n"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	voc := testVocabulary(f)
	naive := func(s []byte, ss []span, e []byte, es []span) int {
		for k := range ss {
			if k >= len(es) {
				return k
			}
			a, b := ss[k], es[k]
			if a.kind != b.kind || a.cat != b.cat || a.kind != spanValue && !bytes.Equal(s[a.start:a.end], e[b.start:b.end]) {
				return k
			}
		}
		if len(es) != len(ss) {
			return len(ss)
		}
		return -1
	}
	f.Fuzz(func(t *testing.T, s, e []byte) {
		ss, _, sref := newRecognizer(voc, false).record(s, 0, nil)
		es, _, eref := newRecognizer(voc, true).record(e, 0, nil)
		if sref != nil || eref != nil {
			return
		}
		if got, want := skeletonDiff(s, ss, e, es), naive(s, ss, e, es); got != want {
			t.Fatalf("skeletonDiff = %d, span by span %d", got, want)
		}
	})
}

// FuzzWireRender: for any output schema, instruction and model, the body
// cuttest's renderer (Go structs through canon.Marshal) makes is the one
// the verifier renders: wire-match holds, with the strict flag cuttest
// computes, and Verify does not panic.
func FuzzWireRender(f *testing.F) {
	f.Add([]byte(testSchema), testInstruction, "model-1", true)
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string","x-privacycut-x":1}},"x-privacycut-rehydrate":{}}`), "", "m", false)
	f.Add([]byte(`[{"type":["object"],"additionalProperties":false},"\u0000",1e3,-0]`), "\"\\\u2028", "m\u00e9", true)
	f.Fuzz(func(t *testing.T, schema []byte, instruction, model string, openai bool) {
		var doc any
		if canon.Unmarshal(schema, &doc, canon.Options{}) != nil || !utf8.ValidString(instruction) || !utf8.ValidString(model) || model == "" {
			return
		}
		if _, err := canon.Marshal(doc); err != nil {
			return // numbers canon does not write (out of range)
		}
		profile := receipts.WireAnthropicMessages
		if openai {
			profile = receipts.WireOpenAIChat
		}
		w := &receipts.Wire{Profile: profile, Model: model, Instruction: instruction, MaxOutputTokens: 7}
		req := makeCut(t, sampleParts, cutOptions{Wire: w, Schema: schema})
		v := verify(req)
		wm := v.Claims[cWire]
		if !wm.OK {
			t.Fatalf("wire-match fails on cuttest's body: %s", wm.Detail)
		}
		if want := "strict=" + strconv.FormatBool(cuttest.Strict(doc)); !strings.Contains(wm.Detail, want) {
			t.Fatalf("wire-match %q, cuttest %s", wm.Detail, want)
		}
	})
}

// FuzzVerifyWire mutates the wire body of an honest cut: a passing verdict
// for any other bytes is a verifier bug.
func FuzzVerifyWire(f *testing.F) {
	base := makeCut(f, sampleParts, cutOptions{Wire: wireOf(receipts.WireOpenAIChat), Schema: []byte(testSchema)})
	f.Add(base.Wire)
	f.Add(bytes.Replace(base.Wire, []byte(`"strict":true`), []byte(`"strict":false`), 1))
	f.Add(bytes.Replace(base.Wire, []byte(`"max_completion_tokens":1024`), []byte(`"max_completion_tokens":1024.0`), 1))
	f.Fuzz(func(t *testing.T, wire []byte) {
		req := base
		req.Wire = wire
		v := verify(req)
		if v.Verdict == receipts.VerdictPass && !bytes.Equal(wire, base.Wire) {
			t.Fatalf("a different wire body passed")
		}
	})
}
