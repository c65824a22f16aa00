package verifier

import (
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// keyedTree returns H(tree): the HMAC of its canonical form, streamed into
// the hash without building it.
func keyedTree(k *receipts.EvidenceKey, tree *canon.Value) (d string, err error) {
	if k == nil {
		return "", errNoKey
	}
	defer func() {
		if recover() != nil {
			d, err = "", receipts.ErrKeyWiped
		}
	}()
	h := k.NewHMAC()
	if err := tree.WriteCanonical(h); err != nil {
		return "", err
	}
	return receipts.FormatHMAC(h.Sum(nil)), nil
}

// compareWriter compares what is written to it with want, without keeping it.
type compareWriter struct {
	want []byte
	off  int
	diff int // first differing offset, or -1
}

func (w *compareWriter) Write(p []byte) (int, error) {
	if w.diff < 0 {
		rest := w.want[min(w.off, len(w.want)):]
		n := min(len(p), len(rest))
		if i := firstDiff(p[:n], rest[:n]); i < n {
			w.diff = w.off + i
		} else if n < len(p) {
			w.diff = w.off + n
		}
	}
	w.off += len(p)
	return len(p), nil
}

// compareCanonical reports the first offset at which the canonical form of
// tree differs from want, or -1 when they are equal, streaming the form.
func compareCanonical(tree *canon.Value, want []byte) (int, error) {
	w := &compareWriter{want: want, diff: -1}
	if err := tree.WriteCanonical(w); err != nil {
		return 0, err
	}
	if w.diff < 0 && w.off != len(want) {
		return min(w.off, len(want)), nil
	}
	return w.diff, nil
}
