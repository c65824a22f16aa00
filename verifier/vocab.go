package verifier

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// The tags of the vocabulary's items in its table. The versions of a
// module are tagged tagVersions plus the module's number in the table.
const (
	tagDiagnostic = iota
	tagStatus
	tagCitation
	tagQuestion
	tagModule
	tagVersions
)

// vocabulary is a decoded Vocabulary@1: hash sets, so that lookups are O(1)
// per item.
type vocabulary struct {
	items *byteTable // every item, tagged by its kind
	// all holds every item of every kind under one tag, for the ambiguity
	// rule.
	all *byteTable
}

// vocabDoc is the wire form of Vocabulary@1, decoded strictly.
type vocabDoc struct {
	Schema      string              `json:"schema"`
	Revision    string              `json:"revision"`
	Diagnostics []string            `json:"diagnostics"`
	Modules     map[string][]string `json:"modules"`
	Statuses    []string            `json:"statuses"`
	Citations   []string            `json:"citations"`
	Questions   []string            `json:"questions"`
}

var errVocabSchema = errors.New("verifier: vocabulary: schema is not Vocabulary@1")

// parseVocabulary strictly decodes a Vocabulary@1 document.
func parseVocabulary(data []byte) (*vocabulary, error) {
	v, _, err := parseVocabularyTree(data)
	return v, err
}

// parseVocabularyTree is parseVocabulary that also returns the document's
// tree whenever it is strict JSON, for its digest: one parse serves both.
func parseVocabularyTree(data []byte) (*vocabulary, *canon.Value, error) {
	tree, err := canon.Parse(data, canon.Options{})
	if err != nil {
		return nil, nil, err
	}
	var d vocabDoc
	if err := tree.Decode(&d); err != nil {
		// The same refusal, as Unmarshal words it (with its line and
		// column): it decodes the same tree the same way.
		return nil, tree, canon.Unmarshal(data, &d, canon.Options{})
	}
	if d.Schema != "Vocabulary@1" {
		return nil, tree, errVocabSchema
	}
	v := &vocabulary{items: newByteTable(), all: newByteTable()}
	for tag, l := range [...][]string{tagDiagnostic: d.Diagnostics, tagStatus: d.Statuses, tagCitation: d.Citations, tagQuestion: d.Questions} {
		for _, it := range l {
			v.items.add(tag, []byte(it))
			v.all.add(0, []byte(it))
		}
	}
	for m, vs := range d.Modules {
		id := v.items.add(tagModule, []byte(m))
		v.all.add(0, []byte(m))
		for _, x := range vs {
			v.items.add(tagVersions+id, []byte(x))
			v.all.add(0, []byte(x))
		}
	}
	return v, tree, nil
}

// release frees the vocabulary's tables; it must not be used after.
func (v *vocabulary) release() {
	v.items.release()
	v.all.release()
}

// The last vocabulary decoded, kept for the next verification of the same
// bytes: a long-lived verifier (the gateway's plugin) is given the same
// vocabulary with every request, and decoding it and building its tables
// is most of a small verification's cost. The key is the exact bytes, kept
// as a copy and compared in full (a tenth of the time hashing them would
// take), so a hit is the decoding of identical input; the tables are read
// only once built, and are freed when the last verification using them
// ends after another vocabulary took their place.
var lastVocab struct {
	sync.Mutex
	e *vocabEntry
}

type vocabEntry struct {
	data   []byte // a copy of the bytes decoded
	voc    *vocabulary
	digest string // S(vocabulary)
	refs   int    // verifications using it, plus one while it is lastVocab.e
}

// loadVocabulary returns the decoded vocabulary of data and its digest, from
// lastVocab when data are the bytes decoded last, and done, which the caller
// calls when it no longer uses the vocabulary. A document that does not
// decode is not kept: voc is nil, and digest is set when it is strict JSON.
func loadVocabulary(data []byte) (voc *vocabulary, digest string, done func(), err error) {
	lastVocab.Lock()
	if e := lastVocab.e; e != nil && bytes.Equal(e.data, data) {
		e.refs++
		lastVocab.Unlock()
		return e.voc, e.digest, func() { unrefVocab(e) }, nil
	}
	lastVocab.Unlock()

	v, tree, err := parseVocabularyTree(data)
	if tree != nil {
		if canonical, cerr := tree.Canonical(); cerr == nil {
			digest = receipts.SHA256(canonical)
		}
	}
	if v == nil {
		return nil, digest, func() {}, err
	}
	e := &vocabEntry{data: bytes.Clone(data), voc: v, digest: digest, refs: 2}
	lastVocab.Lock()
	old := lastVocab.e
	lastVocab.e = e
	lastVocab.Unlock()
	if old != nil {
		unrefVocab(old)
	}
	return v, digest, func() { unrefVocab(e) }, nil
}

func unrefVocab(e *vocabEntry) {
	lastVocab.Lock()
	e.refs--
	free := e.refs == 0
	lastVocab.Unlock()
	if free {
		e.voc.release()
		vocabsFreed.Add(1)
	}
}

// vocabsFreed counts the vocabularies freed, for the tests.
var vocabsFreed atomic.Int64
