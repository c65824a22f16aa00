package verifier

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkCanonicalExport compares decodeCanonicalExport with the strict path
// on data: whatever the direct decoding accepts, parseExport accepts with
// the same parts, no error and a canonical form equal to data. It returns
// whether the direct decoding accepted data.
func checkCanonicalExport(t *testing.T, data []byte) bool {
	t.Helper()
	buf := make([]byte, len(data))
	got, ok := decodeCanonicalExport(data, buf)
	if !ok {
		return false
	}
	want, canonical, err := parseExport(data)
	if err != nil || canonical != -1 {
		t.Fatalf("decoded directly, but the strict path says %v, canonical differs at %d", err, canonical)
	}
	if !reflect.DeepEqual(want, got) { // cmp.Diff only to explain: it is slow on long texts
		t.Fatalf("parts (-strict +direct):\n%s", cmp.Diff(want, got, cmp.AllowUnexported(exportPart{})))
	}
	return true
}

// TestCanonicalExportTaken: the exports a censor writes are decoded
// directly, and so are the corner cases of the canonical escapes.
func TestCanonicalExportTaken(t *testing.T) {
	for _, req := range []Request{makeCut(t, sampleParts, cutOptions{}), makeCut(t, sampleParts, cutOptions{mode: "reversible"})} {
		if !checkCanonicalExport(t, req.Export) {
			t.Fatalf("honest export not decoded directly: %s", req.Export)
		}
	}
	for _, s := range []string{
		`{"parts":[],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"","text":""}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"block","text":"\u0000\u001f\b\f\n\r\t\"\\\u007f é"},{"kind":"tool","text":"x"}],"profile":"closed-diagnostic@1"}`,
	} {
		if !checkCanonicalExport(t, []byte(strings.Replace(s, `\u007f`, "\x7f", 1))) {
			t.Errorf("not decoded directly: %s", s)
		}
	}
}

// TestCanonicalExportLeft: anything that is not exactly canonical and
// shaped is left to the strict path.
func TestCanonicalExportLeft(t *testing.T) {
	for _, s := range []string{
		``,
		`{"parts":[],"profile":"closed-diagnostic@1"} `,
		` {"parts":[],"profile":"closed-diagnostic@1"}`,
		`{"profile":"closed-diagnostic@1","parts":[]}`,
		`{"parts":[],"profile":"closed-diagnostic@2"}`,
		`{"parts":[{"text":"a","kind":"b"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"a","x":1}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"a"}{"kind":"b","text":"a"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"a"},],"profile":"closed-diagnostic@1"}`,
		`{"parts":[,{"kind":"b","text":"a"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"\/"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"\u00e9"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"\u001F"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"\u000a"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"b","text":"\x"}],"profile":"closed-diagnostic@1"}`,
		"{\"parts\":[{\"kind\":\"b\",\"text\":\"\t\"}],\"profile\":\"closed-diagnostic@1\"}",
		"{\"parts\":[{\"kind\":\"b\",\"text\":\"\xff\"}],\"profile\":\"closed-diagnostic@1\"}",
		`{"parts":[{"kind":"b","text":"a`,
	} {
		if checkCanonicalExport(t, []byte(s)) {
			t.Errorf("decoded directly: %q", s)
		}
	}
}

// FuzzCanonicalExport: the direct decoding never accepts what the strict
// path refuses or reads differently.
func FuzzCanonicalExport(f *testing.F) {
	f.Add(makeCut(f, sampleParts, cutOptions{}).Export)
	f.Add([]byte(`{"parts":[{"kind":"block","text":"\u0001\n\"\\"}],"profile":"closed-diagnostic@1"}`))
	f.Add([]byte(`{"parts":[],"profile":"closed-diagnostic@1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCanonicalExport(t, data)
		// The same bytes as a text inside an honest export.
		ex := bytes.Replace([]byte(`{"parts":[{"kind":"block","text":"T"}],"profile":"closed-diagnostic@1"}`), []byte("T"), data, 1)
		checkCanonicalExport(t, ex)
	})
}
