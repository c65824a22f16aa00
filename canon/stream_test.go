package canon

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteCanonical: streaming gives exactly AppendCanonical's bytes, for
// documents small and large (strings longer than the chunk, escapes and
// multi-byte characters straddling chunk boundaries).
func TestWriteCanonical(t *testing.T) {
	long := strings.Repeat("ab\"c\\d\né€𝄞\x01", streamChunk/5)
	docs := []string{
		`{"b":1,"a":[true,false,null,"x"],"c":{"z":"\u00e9","y":1e21}}`,
		`{"text":"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\x01", `\u0001`).Replace(long) + `","k":"v"}`,
		`[]`, `"s"`, `0.000001`,
	}
	for _, d := range docs {
		v, err := Parse([]byte(d), Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := v.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := v.WriteCanonical(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("stream differs from Canonical for a %d-byte document", len(d))
		}
	}
	// A tree with invalid UTF-8 is refused the same way.
	bad := &Value{Kind: String, Str: []byte{0xff}}
	if err := bad.WriteCanonical(&bytes.Buffer{}); err == nil {
		t.Fatal("invalid UTF-8 streamed")
	}
}
