package verifier

import (
	"errors"

	"github.com/privacycut/privacycut/receipts"
)

// set is a hash set of vocabulary items: lookups are O(1) per item.
type set map[string]struct{}

func (s set) has(b []byte) bool {
	_, ok := s[string(b)]
	return ok
}

func newSet(items []string) set {
	s := make(set, len(items))
	for _, it := range items {
		s[it] = struct{}{}
	}
	return s
}

// vocabulary is a decoded Vocabulary@1.
type vocabulary struct {
	diagnostics, statuses, citations, questions set
	modules                                     map[string]set
	// all holds every item of every kind, for the ambiguity rule.
	all set
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
	var d vocabDoc
	if err := receipts.Unmarshal(data, &d, receipts.Options{}); err != nil {
		return nil, err
	}
	if d.Schema != "Vocabulary@1" {
		return nil, errVocabSchema
	}
	v := &vocabulary{
		diagnostics: newSet(d.Diagnostics),
		statuses:    newSet(d.Statuses),
		citations:   newSet(d.Citations),
		questions:   newSet(d.Questions),
		modules:     make(map[string]set, len(d.Modules)),
		all:         make(set),
	}
	for _, l := range [][]string{d.Diagnostics, d.Statuses, d.Citations, d.Questions} {
		for _, it := range l {
			v.all[it] = struct{}{}
		}
	}
	for m, vs := range d.Modules {
		v.modules[m] = newSet(vs)
		v.all[m] = struct{}{}
		for _, x := range vs {
			v.all[x] = struct{}{}
		}
	}
	return v, nil
}
