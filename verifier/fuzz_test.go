package verifier

import (
	"bytes"
	"testing"

	"github.com/privacycut/privacycut/receipts"
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

// FuzzShadowRecord: when shadowRecord accepts an export record against an
// accepted source record, the recognizer gives the same spans and end.
func FuzzShadowRecord(f *testing.F) {
	src := "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"a\" owner.team=\"x \\\"y\\\" \\\\ z\"\n"
	seeds := [][2]string{
		{src, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"redacted:module:1\" owner.team=\"redacted:team:1\"\n"},
		{"ask triage.explain owner.host=\"h\"\n", "ask triage.explain owner.host=\"redacted:host:1\"\nask"},
		{"ask triage.explain owner.host=\"h\"\n", "ask triage.explain owner.host=\"\"\n"},
		{"ask triage.explain owner.host=\"h\"\n", "ask triage.explain owner.host=\"a\"b\"\n"},
		{dep + "\n", dep + "\n"},
		{dep + "\n", dep},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	voc := testVocabulary(f)
	f.Fuzz(func(t *testing.T, s, e []byte) {
		sr := newRecognizer(voc, false)
		er := newRecognizer(voc, true)
		for _, r := range []*recognizer{sr, er} {
			r.maxRecord, r.maxOwners = 256, 4
		}
		ss, _, ref := sr.record(s, 0, nil)
		if ref != nil {
			return
		}
		shadow, end, ok := shadowRecord(er, s, ss, e, 0, nil)
		if !ok {
			if end != 0 {
				t.Fatalf("refused shadow moved to %d", end)
			}
			return
		}
		es, eend, eref := er.record(e, 0, nil)
		if eref != nil {
			t.Fatalf("shadow accepted a record the recognizer refuses: %+v", eref)
		}
		if eend != end || len(es) != len(shadow) {
			t.Fatalf("shadow: end %d, %d spans; recognizer: end %d, %d spans", end, len(shadow), eend, len(es))
		}
		for k := range es {
			if es[k] != shadow[k] {
				t.Fatalf("span %d: shadow %+v, recognizer %+v", k, shadow[k], es[k])
			}
		}
	})
}
