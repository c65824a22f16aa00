package verifier

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// matcher is an Aho–Corasick automaton over byte patterns: one pass over a
// text finds every occurrence of every pattern, whatever their number.
type matcher struct {
	nodes []acNode // in breadth-first order: a node's fail state comes before it
	kids  []acKid
	root  [256]int32 // complete transition table of the root
	// delta is the complete transition table of every state, over byte
	// classes (entry state*nclass + class[byte]), built when it is small
	// enough: one lookup per byte. Bytes that occur in no pattern share
	// class 0. Entries are little-endian int32 in a buffer from newBuffer.
	// A transition into a state where some pattern ends is stored
	// complemented (^state, negative), so that the scan tests one sign.
	delta  []byte
	class  [256]uint16
	nclass int
	free   func() // frees delta
	// starts tells the bytes that begin a pattern: in the root state, the
	// scan skips the others without a transition.
	starts [256]bool
}

// denseMax bounds the complete transition table: states × classes entries
// of 4 bytes (64 MiB at most).
const denseMax = 1 << 24

type acNode struct {
	first, n int32 // children: kids[first : first+n], sorted by byte
	fail     int32 // longest proper suffix that is a trie node
	out      int32 // length of the pattern ending here, 0 if none
	dict     int32 // nearest node on the fail chain with out > 0, or -1
}

type acKid struct {
	b  byte
	to int32
}

// newMatcher builds the automaton for patterns (empty patterns are ignored).
// The trie is built from the sorted patterns, a node's children being the
// runs of patterns that share its prefix and the next byte, so that it
// costs a few arrays and no allocation per node. The caller calls release
// when done.
func newMatcher(patterns [][]byte) *matcher { return newMatcherLimit(patterns, denseMax) }

// newMatcherLimit is newMatcher with a complete table only when it has at
// most limit entries.
func newMatcherLimit(patterns [][]byte, limit int) *matcher {
	ps := make([][]byte, 0, len(patterns))
	total := 0
	for _, p := range patterns {
		if len(p) > 0 {
			ps = append(ps, p)
			total += len(p)
		}
	}
	slices.SortFunc(ps, bytes.Compare)
	ps = slices.CompactFunc(ps, bytes.Equal)

	// Breadth-first: node u stands for the patterns ps[lo:hi] that share
	// their first depth bytes.
	type group struct{ lo, hi, depth int32 }
	m := &matcher{nodes: make([]acNode, 1, total+1), kids: make([]acKid, 0, total)}
	m.nodes[0].dict = -1
	queue := make([]group, 1, total+1)
	queue[0] = group{0, int32(len(ps)), 0}
	for u := 0; u < len(queue); u++ {
		g := queue[u]
		lo := g.lo
		if lo < g.hi && len(ps[lo]) == int(g.depth) {
			m.nodes[u].out = g.depth // the pattern that is this prefix sorts first
			lo++
		}
		m.nodes[u].first = int32(len(m.kids))
		for lo < g.hi {
			c := ps[lo][g.depth]
			hi := lo + 1
			for hi < g.hi && ps[hi][g.depth] == c {
				hi++
			}
			v := int32(len(m.nodes))
			m.nodes = append(m.nodes, acNode{dict: -1})
			m.kids = append(m.kids, acKid{c, v})
			queue = append(queue, group{lo, hi, g.depth + 1})
			lo = hi
		}
		m.nodes[u].n = int32(len(m.kids)) - m.nodes[u].first
	}
	for _, k := range m.kidsOf(0) {
		m.root[k.b] = k.to
		m.starts[k.b] = true
	}

	// Byte classes: one per byte that occurs in a pattern.
	for _, k := range m.kids {
		if m.class[k.b] == 0 {
			m.nclass++
			m.class[k.b] = uint16(m.nclass)
		}
	}
	m.nclass++ // class 0
	if len(m.nodes)*m.nclass <= limit {
		m.buildDense()
	} else {
		m.buildSparse()
	}
	return m
}

func (m *matcher) kidsOf(u int32) []acKid {
	n := m.nodes[u]
	return m.kids[n.first : n.first+n.n]
}

// buildDense computes the complete table and the fail links together, in
// breadth-first order: a node's row is its fail state's row with its own
// children set, and a child's fail state is the transition of the node's
// fail state on the child's byte.
func (m *matcher) buildDense() {
	w := m.nclass
	m.delta, m.free = newBuffer(4 * len(m.nodes) * w)
	for u := range m.nodes {
		if u > 0 {
			f := int(m.nodes[u].fail)
			copy(m.delta[4*u*w:4*(u+1)*w], m.delta[4*f*w:4*(f+1)*w])
		}
		for _, k := range m.kidsOf(int32(u)) {
			e := u*w + int(m.class[k.b])
			if u > 0 {
				m.nodes[k.to].fail = m.entry(e)
			}
			m.setEntry(e, k.to)
		}
		if u > 0 {
			m.setDict(int32(u))
		}
	}
	for e := range len(m.delta) / 4 {
		if t := m.entry(e); m.nodes[t].out > 0 || m.nodes[t].dict > 0 {
			m.setEntry(e, ^t)
		}
	}
}

func (m *matcher) entry(e int) int32 { return int32(binary.LittleEndian.Uint32(m.delta[4*e:])) }

func (m *matcher) setEntry(e int, t int32) { binary.LittleEndian.PutUint32(m.delta[4*e:], uint32(t)) }

// buildSparse computes the fail links by following fail links.
func (m *matcher) buildSparse() {
	for u := range m.nodes {
		for _, k := range m.kidsOf(int32(u)) {
			v := k.to
			if u == 0 {
				continue // the root's children fail to the root
			}
			f := m.nodes[u].fail
			for {
				if t, ok := m.step(f, k.b); ok && t != v {
					m.nodes[v].fail = t
					break
				}
				if f == 0 {
					m.nodes[v].fail = 0
					break
				}
				f = m.nodes[f].fail
			}
		}
		if u > 0 {
			m.setDict(int32(u))
		}
	}
}

// setDict sets the dictionary link of v, whose fail state's is set.
func (m *matcher) setDict(v int32) {
	fv := m.nodes[v].fail
	if m.nodes[fv].out > 0 {
		m.nodes[v].dict = fv
	} else {
		m.nodes[v].dict = m.nodes[fv].dict
	}
}

// release frees the matcher's table; the matcher must not be used after.
func (m *matcher) release() {
	if m.free != nil {
		m.free()
		m.free, m.delta = nil, nil
	}
}

// step returns the child of s on byte c. The root's table is complete: a
// missing child of the root is the root itself.
func (m *matcher) step(s int32, c byte) (int32, bool) {
	if s == 0 {
		return m.root[c], true
	}
	n := m.nodes[s]
	kids := m.kids[n.first : n.first+n.n]
	lo, hi := 0, len(kids)
	for lo < hi {
		mid := (lo + hi) / 2
		switch {
		case kids[mid].b == c:
			return kids[mid].to, true
		case kids[mid].b < c:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// empty reports whether the matcher has no pattern.
func (m *matcher) empty() bool { return len(m.nodes) <= 1 }

// scan reports every occurrence [start, end) of a pattern inside
// text[from:to] to fn, in order of end offset; fn returns false to stop.
func (m *matcher) scan(text []byte, from, to int, fn func(start, end int) bool) {
	if m.empty() {
		return
	}
	if m.delta != nil {
		m.scanDense(text, from, to, fn)
		return
	}
	s := int32(0)
	for i := from; i < to; i++ {
		s = m.stepFail(s, text[i])
		if s == 0 || (m.nodes[s].out == 0 && m.nodes[s].dict <= 0) {
			continue
		}
		if !m.report(s, i+1, fn) {
			return
		}
	}
}

// scanDense is scan with the complete transition table: two lookups and
// one sign test per byte, and in the root state one lookup per byte until a
// byte that begins a pattern.
func (m *matcher) scanDense(text []byte, from, to int, fn func(start, end int) bool) {
	delta, w := m.delta, m.nclass
	s := 0
	for i := from; i < to; i++ {
		if s == 0 {
			for i < to && !m.starts[text[i]] {
				i++
			}
			if i == to {
				return
			}
		}
		t := int32(binary.LittleEndian.Uint32(delta[4*(s*w+int(m.class[text[i]])):]))
		if t >= 0 {
			s = int(t)
			continue
		}
		s = int(^t)
		if !m.report(int32(s), i+1, fn) {
			return
		}
	}
}

// report gives fn every pattern that ends at end in state s; it returns
// false when fn asks to stop.
func (m *matcher) report(s int32, end int, fn func(start, end int) bool) bool {
	o := s
	if m.nodes[o].out == 0 {
		o = m.nodes[o].dict
	}
	for o > 0 {
		if !fn(end-int(m.nodes[o].out), end) {
			return false
		}
		o = m.nodes[o].dict
	}
	return true
}

// stepFail follows fail links until a transition on c exists.
func (m *matcher) stepFail(s int32, c byte) int32 {
	for {
		if t, ok := m.step(s, c); ok {
			return t
		}
		s = m.nodes[s].fail
	}
}
