package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const osvTestDB = "../../../osvvocab/testdata/db"

// TestVocabBuildTarGz: cut vocab build --osv takes the database as a
// tar.gz (generated here, with a prefix directory) and writes the bytes
// of the directory and zip forms.
func TestVocabBuildTarGz(t *testing.T) {
	e := newTestEnv(t)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(osvTestDB, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(osvTestDB, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: "vulndb/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tw.Close()
	zw.Close()
	tgz := e.write(t, "vulndb.tar.gz", buf.String())
	zpath := e.write(t, "vulndb.zip", string(zipDir(t, osvTestDB)))

	outs := map[string][]byte{}
	for name, src := range map[string]string{"dir": osvTestDB, "zip": zpath, "tar.gz": tgz} {
		out := filepath.Join(e.dir, name+".vocab.json")
		code, _, errb := e.run(t, "vocab", "build", "--osv", src, "-o", out)
		if code != ExitOK || !strings.Contains(string(errb), "cut: vocab: 5 entries from 8 JSON files") {
			t.Fatalf("vocab build --osv %s: exit %d\n%s", name, code, errb)
		}
		outs[name], _ = os.ReadFile(out)
	}
	if !bytes.Equal(outs["tar.gz"], outs["dir"]) || !bytes.Equal(outs["zip"], outs["dir"]) {
		t.Fatal("the tar.gz, zip and directory forms give other vocabularies")
	}

	// A gzip file that is no tar archive is an error naming the form.
	bad := e.write(t, "bad.tar.gz", "\x1f\x8b\x08\x00broken")
	code, _, errb := e.run(t, "vocab", "build", "--osv", bad)
	if code != ExitError || !strings.Contains(string(errb), "bad.tar.gz: not a readable tar.gz archive") {
		t.Fatalf("broken tar.gz: exit %d %s", code, errb)
	}
}
