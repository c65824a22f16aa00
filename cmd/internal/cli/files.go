package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	return data, nil, nil
}

func loadVocabulary(path string) (*grammar.Vocabulary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read vocabulary: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, grammar.MaxVocabularyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read vocabulary: %w", err)
	}
	v, err := grammar.LoadVocabulary(data)
	if err != nil {
		return nil, err
	}
	return v, nil
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
