package censor

import (
	"bytes"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// escapedResidual finds an owner value written with escapes (\" or \\) that,
// decoded, reads somewhere in the export: in a candidate text (where it is
// JSON-escaped) or across the export's own JSON structure. Its decoded form
// holds a quote or a backslash, which no public item and no token has, so
// such a value is made of the export's structure, and an occurrence
// discloses the value whole. It returns the refusal at the value's first
// span (AMBIGUOUS_SPAN), or nil.
//
// Values without escapes are not searched here: one that reads as a run of
// public items (it holds a separator) leaves the cut to the verifier's
// no-residual claim, which fails it (docs/DESIGN.md).
func escapedResidual(doc *grammar.Document, refs []ownerRef, pairs []Pair, export []byte) *receipts.Refusal {
	var ac acMatcher
	first := map[int32]ownerRef{}
	for _, r := range refs {
		if _, seen := first[r.pair]; seen {
			continue
		}
		raw := doc.Parts[r.part].Text[r.off : r.off+r.n]
		if bytes.IndexByte(raw, '\\') < 0 {
			continue
		}
		first[r.pair] = r
		d := pairs[r.pair].Value
		ac.add(d, r.pair)
		ac.add(canon.AppendStringBody(nil, d), r.pair)
	}
	if len(first) == 0 {
		return nil
	}
	pair, ok := ac.find(export)
	if !ok {
		return nil
	}
	r := first[pair]
	text := doc.Parts[r.part].Text
	lineStart := bytes.LastIndexByte(text[:r.off], '\n') + 1
	return &receipts.Refusal{Code: receipts.AmbiguousSpan, Part: int(r.part), Kind: doc.Parts[r.part].Kind,
		Line: 1 + bytes.Count(text[:r.off], []byte{'\n'}), Column: int(r.off) - lineStart + 1, Length: int(r.n),
		Offset: int(r.off)}
}

// acMatcher is an Aho–Corasick automaton over byte patterns, each with an
// id. It is built only for the rare values written with escapes.
type acMatcher struct {
	next []map[byte]int32
	fail []int32
	out  []int32 // the id of a pattern ending at the node (itself or by a fail link), or -1
	done bool
}

func (m *acMatcher) add(p []byte, id int32) {
	if m.next == nil {
		m.next, m.fail, m.out = []map[byte]int32{{}}, []int32{0}, []int32{-1}
	}
	s := int32(0)
	for _, c := range p {
		t, ok := m.next[s][c]
		if !ok {
			t = int32(len(m.next))
			m.next = append(m.next, map[byte]int32{})
			m.fail = append(m.fail, 0)
			m.out = append(m.out, -1)
			m.next[s][c] = t
		}
		s = t
	}
	if m.out[s] < 0 {
		m.out[s] = id
	}
}

// link sets the fail links, breadth first.
func (m *acMatcher) link() {
	queue := []int32{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for c, v := range m.next[u] {
			queue = append(queue, v)
			if u == 0 {
				continue
			}
			f := m.fail[u]
			for f != 0 && !m.has(f, c) {
				f = m.fail[f]
			}
			if t, ok := m.next[f][c]; ok {
				m.fail[v] = t
			}
			if m.out[v] < 0 {
				m.out[v] = m.out[m.fail[v]]
			}
		}
	}
	m.done = true
}

func (m *acMatcher) has(s int32, c byte) bool { _, ok := m.next[s][c]; return ok }

// find returns the id of the first pattern (by end) that occurs in text.
func (m *acMatcher) find(text []byte) (int32, bool) {
	if m.next == nil {
		return 0, false
	}
	if !m.done {
		m.link()
	}
	s := int32(0)
	for _, c := range text {
		for s != 0 && !m.has(s, c) {
			s = m.fail[s]
		}
		if t, ok := m.next[s][c]; ok {
			s = t
		}
		if m.out[s] >= 0 {
			return m.out[s], true
		}
	}
	return 0, false
}
