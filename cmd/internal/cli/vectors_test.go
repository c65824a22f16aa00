package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// TestVectorsThroughCutVerify runs every CCTV-style vector of
// verifier/testdata/vectors (made by a generator that imports neither the
// censor nor the verifier) through `cut verify`: the untouched bundles pass
// with exit 0 (a reversible one fails token-consistency alone: no vault
// vouches for its tokens), each seeded corruption exits 4 naming its
// expected claims.
func TestVectorsThroughCutVerify(t *testing.T) {
	files, err := filepath.Glob("../../../verifier/testdata/vectors/*.txt")
	if err != nil || len(files) < 12 {
		t.Fatalf("vectors: %v (%d files)", err, len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			comment, f := parseTxtar(data)
			header := strings.SplitN(comment, "\n", 2)[0]
			expect, ok := strings.CutPrefix(header, "expect: ")
			if !ok {
				t.Fatalf("no expect header: %q", header)
			}
			e := newTestEnv(t)
			key := make([]byte, 32)
			hex := strings.TrimSpace(string(f["key.hex"]))
			for i := range key {
				var b byte
				for _, c := range hex[2*i : 2*i+2] {
					b = b<<4 | byte(strings.IndexRune("0123456789abcdef", c))
				}
				key[i] = b
			}
			keyPath := filepath.Join(e.dir, "evidence.key")
			if err := os.WriteFile(keyPath, key, 0o600); err != nil {
				t.Fatal(err)
			}
			// The bundle holds the vector's export and receipts as written
			// (a bundle is read as written), and the terminal receipt's
			// label digest.
			var rs []receipts.TransformationReceipt
			label := ""
			if canon.Unmarshal(f["receipts.json"], &rs, canon.Options{}) == nil && len(rs) > 0 {
				label = rs[len(rs)-1].LabelDigest
			}
			bb, err := canon.Marshal(receipts.Bundle{Schema: receipts.SchemaBundle, Export: json.RawMessage("0"),
				ExportDigest: strings.TrimSpace(string(f["export_digest"])), LabelDigest: label})
			if err != nil {
				t.Fatal(err)
			}
			bb = bytes.Replace(bb, []byte(`{"export":0,`), append(append([]byte(`{"export":`), bytes.TrimSpace(f["export.json"])...), ','), 1)
			bb = bytes.Replace(bb, []byte(`"receipts":null`), append([]byte(`"receipts":`), bytes.TrimSpace(f["receipts.json"])...), 1)
			// A provider profile's wire body and output schema, as written.
			if w, ok := f["wire.json"]; ok {
				w = bytes.TrimSpace(w)
				bb = bytes.Replace(bb, []byte(`"verification":`), append(append([]byte(`"wire":`), w...), []byte(`,"wire_digest":"`+receipts.SHA256(w)+`","output_schema":`+string(bytes.TrimSpace(f["schema.json"]))+`,"verification":`)...), 1)
			}
			args := []string{"verify", "--verifier", "inprocess", "--json", "--evidence-key", keyPath,
				"--vocab", e.write(t, "vocab.json", string(f["vocab.json"])),
				"--plan", e.write(t, "plan.json", string(f["plan.json"])),
				"--source", e.write(t, "source.json", string(f["source.json"])),
				e.write(t, "bundle.json", string(bb))}
			code, out, errb := e.run(t, args...)
			var v receipts.Verification
			if err := canon.Unmarshal(out, &v, canon.Options{}); err != nil {
				t.Fatalf("exit %d, stdout not a verification: %v\n%s\n%s", code, err, out, errb)
			}
			if _, reversible := f["lease"]; expect == "pass" && reversible {
				// cut verify cannot ask the vault that issued a vector's
				// tokens (none runs): its tokens are not vouched for, and
				// token-consistency alone fails, saying so.
				if code != ExitVerifyNo || len(v.Failed()) != 1 || v.Failed()[0] != receipts.ClaimTokenConsistent ||
					!strings.Contains(v.Claims[4].Detail, "no issuer given") {
					t.Fatalf("exit %d, failed %v: %+v", code, v.Failed(), v.Claims)
				}
				return
			}
			if expect == "pass" {
				if code != ExitOK || v.Verdict != receipts.VerdictPass {
					t.Fatalf("exit %d, failed %v", code, v.Failed())
				}
				if w, ok := f["wire.json"]; ok {
					// The bundle's wire_digest must be its wire's.
					forged := bytes.Replace(bb, []byte(receipts.SHA256(bytes.TrimSpace(w))), []byte(receipts.SHA256([]byte("other"))), 1)
					args[len(args)-1] = e.write(t, "forged.json", string(forged))
					code, out, _ := e.run(t, args...)
					if code != ExitVerifyNo || !bytes.Contains(out, []byte("wire_digest is not the sha256 of its wire")) {
						t.Fatalf("a bundle with another wire_digest: exit %d\n%s", code, out)
					}
				}
				return
			}
			want := strings.Split(strings.TrimPrefix(expect, "fail "), ",")
			if code != ExitVerifyNo || v.Verdict != "fail" {
				t.Fatalf("exit %d verdict %s, want 4 fail", code, v.Verdict)
			}
			for _, claim := range want {
				if !contains(v.Failed(), claim) {
					t.Errorf("claim %s not failed; failed %v", claim, v.Failed())
				}
			}
		})
	}
}

// parseTxtar splits a txtar archive into its comment and files.
func parseTxtar(data []byte) (string, map[string][]byte) {
	files := map[string][]byte{}
	var comment strings.Builder
	name := ""
	for _, line := range strings.SplitAfter(string(data), "\n") {
		trimmed := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			name = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			files[name] = []byte{}
			continue
		}
		if name == "" {
			comment.WriteString(line)
		} else {
			files[name] = append(files[name], line...)
		}
	}
	return comment.String(), files
}
