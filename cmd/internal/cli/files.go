package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// readCapped reads a file (or stdin for "-") of at most max bytes. over
// reports a file that is larger. With a command, a large regular file is
// read into one of its buffers (valid until Run returns).
func readCapped(c *Cmd, path string, max int64) (data []byte, over bool, err error) {
	var r io.Reader
	if path == "-" {
		if c == nil {
			return nil, false, errors.New("standard input is not accepted for this file")
		}
		r = c.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, false, err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if fi.Size() > max {
				return nil, true, nil
			}
			// Read a regular file into one buffer of its size (and one byte
			// more, to see growth): no doubling copies of a large projection.
			if c != nil {
				data = c.buffer(int(fi.Size() + 1))[:0]
			} else {
				data = make([]byte, 0, fi.Size()+1)
			}
			for {
				n, err := f.Read(data[len(data):cap(data)])
				data = data[:len(data)+n]
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, false, err
				}
				if len(data) == cap(data) {
					data = append(data, 0)[:len(data)] // grew while reading
				}
				if int64(len(data)) > max {
					return nil, true, nil
				}
			}
			return data, false, nil
		}
		r = f
	}
	data, err = io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return nil, true, nil
	}
	return data, false, nil
}

// readProjection reads a projection file; a file over the size limit is a
// refusal, not an error.
func readProjection(c *Cmd, path string) ([]byte, []receipts.Refusal, error) {
	data, over, err := readCapped(c, path, grammar.DefaultMaxProjectionBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read projection: %w", err)
	}
	if over {
		return nil, []receipts.Refusal{{Code: receipts.LimitExceeded, Part: -1, Line: 1, Column: 1}}, nil
	}
	if c != nil {
		c.projectionHint(data)
	}
	return data, nil, nil
}

func loadVocabulary(path string) (*grammar.Vocabulary, error) {
	data, err := readVocabularyFile(path)
	if err != nil {
		return nil, err
	}
	v, err := grammar.LoadVocabulary(data)
	if err != nil {
		return nil, vocabularyError(data, err)
	}
	return v, nil
}

// readVocabularyFile reads a --vocab file; a directory (an unpacked OSV
// database, most likely) is named as one, with the command that builds a
// vocabulary from it.
func readVocabularyFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, errors.New("--vocab is a directory, not a Vocabulary@1: give an OSV database directory to cut vocab build --osv to build one")
	}
	data, err := readFileCapped(path, grammar.MaxVocabularyBytes)
	if err != nil {
		return nil, fmt.Errorf("read vocabulary: %w", err)
	}
	return data, nil
}

// outputFile is an output file written in full or not at all. It is
// created (with its final mode, as a temporary file next to its path) before
// the work whose result it will hold, so that a path that cannot be written
// fails before that work (a rehydration consumes its lease: its answer could
// not be asked for again). commit renames it over the path: no reader sees
// it part-written, and a file or symbolic link already at the path is
// replaced, never written through with its own mode.
type outputFile struct {
	f    *os.File
	path string
	done bool // committed, or removed by a failed commit
}

func createOutput(path string, perm os.FileMode) (*outputFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &outputFile{f: f, path: path}, nil
}

// Write writes to the file, before commit.
func (o *outputFile) Write(b []byte) (int, error) { return o.f.Write(b) }

// commit writes data (after anything Write wrote), syncs the file and
// renames it over its path.
func (o *outputFile) commit(data []byte) error {
	_, err := o.f.Write(data)
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.f.Name())
	}
	o.done = true
	return err
}

// abort removes the file unless commit has run.
func (o *outputFile) abort() {
	if !o.done {
		o.f.Close()
		os.Remove(o.f.Name())
	}
}

// A file kind is what fileKind recognizes a file as, for a hint when a
// command is given the wrong kind of file.
type fileKind int

const (
	kindUnknown fileKind = iota
	kindVocabulary
	kindProjection
	kindPlan
	kindOSVEntry
	kindGovulncheck
	kindOpenVEX
	kindOSVScanner
	kindZip
	kindGzip
)

// String names the kind for a message ("a govulncheck -json stream").
func (k fileKind) String() string {
	return [...]string{"an unrecognized file", "a Vocabulary@1", "a Projection@1", "a DisclosurePlan@1",
		"an OSV entry (one vulnerability of the database, not a vocabulary)", "a govulncheck -json stream",
		"an OpenVEX document", "an osv-scanner JSON report", "a zip archive", "a gzip archive"}[k]
}

// importer names the cut import command that reads a scanner's output of
// this kind ("" for a kind that is not one).
func (k fileKind) importer() string {
	switch k {
	case kindGovulncheck:
		return "govulncheck"
	case kindOpenVEX:
		return "openvex"
	case kindOSVScanner:
		return "osv-scanner"
	}
	return ""
}

// sniffKind recognizes a file from its first bytes and the top-level keys
// of its first JSON value. It reads names of keys and the values of
// "schema" and "@context" only, and returns only a kind: nothing of the
// file reaches a message.
func sniffKind(data []byte) fileKind {
	switch {
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return kindZip
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return kindGzip
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return kindUnknown
	}
	keys := map[string]bool{}
	var schema, context string
	for n := 0; dec.More() && n < 64; n++ {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		keys[key] = true
		var err2 error
		switch key {
		case "schema":
			err2 = dec.Decode(&schema)
		case "@context":
			err2 = dec.Decode(&context)
		default:
			var skip json.RawMessage
			err2 = dec.Decode(&skip)
		}
		if err2 != nil {
			break
		}
		if n == 0 {
			// A govulncheck stream is a sequence of messages of one key each.
			switch key {
			case "config", "progress", "SBOM", "osv", "finding":
				return kindGovulncheck
			}
		}
	}
	switch {
	case schema == grammar.VocabularySchema:
		return kindVocabulary
	case schema == grammar.ProjectionSchema:
		return kindProjection
	case schema == receipts.SchemaPlan:
		return kindPlan
	case strings.HasPrefix(context, "https://openvex.dev/ns"):
		return kindOpenVEX
	case keys["results"] && !keys["schema"]:
		return kindOSVScanner
	case keys["schema_version"] && keys["id"] && (keys["affected"] || keys["modified"]):
		return kindOSVEntry
	}
	return kindUnknown
}

// vocabularyError adds to an error loading a vocabulary what the file is
// instead and the command that builds a Vocabulary@1.
func vocabularyError(data []byte, err error) error {
	k := sniffKind(data[:min(len(data), 64<<10)])
	switch k {
	case kindVocabulary:
		return err
	case kindUnknown:
		return fmt.Errorf("%w\n(--vocab takes a Vocabulary@1: build one with cut vocab build --osv DIR|ZIP|TAR.GZ -o vocab.json)", err)
	}
	how := "build one from the OSV database with cut vocab build --osv DIR|ZIP|TAR.GZ -o vocab.json"
	if k == kindZip || k == kindGzip || k == kindOSVEntry {
		how = "give it to cut vocab build --osv to build one"
	}
	return fmt.Errorf("--vocab is %s, not a Vocabulary@1: %s", k, how)
}

// projectionHint prints, for a projection file that is a scanner's output,
// the cut import command that makes a Projection@1 of it.
//
// It reads the first 64 KiB only: every projection is read through here,
// and skipping a large first member (a projection's parts) would cost a
// decoding of the whole file. A scanner's output names itself in its
// first members.
func (c *Cmd) projectionHint(data []byte) {
	k := sniffKind(data[:min(len(data), 64<<10)])
	if imp := k.importer(); imp != "" {
		c.hintf("the projection is %s, not a Projection@1: make one with cut import %s --vocab V -o findings.json FILE", k, imp)
	}
}
