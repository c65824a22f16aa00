package verifier

import (
	"bytes"
	"slices"
)

// matcher is an Aho–Corasick automaton over byte patterns: one pass over a
// text finds every occurrence of every pattern, whatever their number.
//
// Its arrays are little-endian encoded in buffers from newBuffer, so that a
// fresh process (the plugin) maps them in at once rather than page by page;
// release frees them.
type matcher struct {
	nodes  growBuf // nodeSize bytes per node (acNode), in breadth-first order: a node's fail state comes before it
	kids   growBuf // kidSize bytes per child (acKid)
	nnodes int
	root   [256]int32 // complete transition table of the root
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
	first, n int32 // children: kids first … first+n-1, sorted by byte
	fail     int32 // longest proper suffix that is a trie node
	out      int32 // length of the pattern ending here, 0 if none
	dict     int32 // nearest node on the fail chain with out > 0, or -1
}

type acKid struct {
	b  byte
	to int32
}

const (
	nodeSize = 20
	kidSize  = 8
)

func (m *matcher) node(u int32) acNode {
	b := m.nodes.b[int(u)*nodeSize : int(u+1)*nodeSize]
	return acNode{int32(le32(b, 0)), int32(le32(b, 4)), int32(le32(b, 8)), int32(le32(b, 12)), int32(le32(b, 16))}
}

func (m *matcher) setNode(u int32, n acNode) {
	b := m.nodes.b[int(u)*nodeSize : int(u+1)*nodeSize]
	put32(b, 0, uint32(n.first))
	put32(b, 4, uint32(n.n))
	put32(b, 8, uint32(n.fail))
	put32(b, 12, uint32(n.out))
	put32(b, 16, uint32(n.dict))
}

// addNode appends a node and returns its number.
func (m *matcher) addNode(n acNode) int32 {
	u := int32(m.nnodes)
	m.nnodes++
	m.nodes.extend(nodeSize)
	m.setNode(u, n)
	return u
}

func (m *matcher) kid(i int32) acKid {
	b := m.kids.b[int(i)*kidSize : int(i+1)*kidSize]
	return acKid{b[4], int32(le32(b, 0))}
}

func (m *matcher) addKid(k acKid) {
	b := m.kids.extend(kidSize)
	put32(b, 0, uint32(k.to))
	b[4] = k.b
}

// newMatcher builds the automaton for patterns (empty patterns are ignored).
// The trie is built from the sorted patterns, a node's children being the
// runs of patterns that share its prefix and the next byte, so that it
// costs a few arrays and no allocation per node. It sorts patterns in
// place. The caller calls release when done.
func newMatcher(patterns [][]byte) *matcher { return newMatcherLimit(patterns, denseMax) }

// newMatcherLimit is newMatcher with a complete table only when it has at
// most limit entries.
func newMatcherLimit(patterns [][]byte, limit int) *matcher {
	slices.SortFunc(patterns, bytes.Compare)
	ps := slices.CompactFunc(patterns, bytes.Equal)
	for len(ps) > 0 && len(ps[0]) == 0 {
		ps = ps[1:] // the empty pattern sorts first
	}
	total := 0
	for _, p := range ps {
		total += len(p)
	}

	// Breadth-first: node u stands for the patterns ps[lo:hi] that share
	// their first depth bytes (the queue holds lo, hi and depth).
	m := &matcher{}
	m.nodes.reset(nodeSize * (total + 1))
	m.nodes.b = m.nodes.b[:0]
	m.kids.reset(kidSize * total)
	m.kids.b = m.kids.b[:0]
	var queue growBuf
	defer queue.release()
	queue.reset(12 * (total + 1))
	queue.b = queue.b[:0]
	push := func(lo, hi, depth int) {
		q := queue.extend(12)
		put32(q, 0, uint32(lo))
		put32(q, 4, uint32(hi))
		put32(q, 8, uint32(depth))
	}
	m.addNode(acNode{dict: -1})
	push(0, len(ps), 0)
	for u := int32(0); int(u) < m.nnodes; u++ {
		q := queue.b[12*int(u):]
		lo, hi, depth := int(le32(q, 0)), int(le32(q, 4)), int(le32(q, 8))
		n := m.node(u)
		if lo < hi && len(ps[lo]) == depth {
			n.out = int32(depth) // the pattern that is this prefix sorts first
			lo++
		}
		n.first = int32(len(m.kids.b) / kidSize)
		for lo < hi {
			c := ps[lo][depth]
			end := lo + 1
			for end < hi && ps[end][depth] == c {
				end++
			}
			m.addKid(acKid{c, m.addNode(acNode{dict: -1})})
			push(lo, end, depth+1)
			lo = end
		}
		n.n = int32(len(m.kids.b)/kidSize) - n.first
		m.setNode(u, n)
	}
	first, end := m.kidsOf(0)
	for i := first; i < end; i++ {
		k := m.kid(i)
		m.root[k.b] = k.to
		m.starts[k.b] = true
	}

	// Byte classes: one per byte that occurs in a pattern.
	for i := range int32(len(m.kids.b) / kidSize) {
		if k := m.kid(i); m.class[k.b] == 0 {
			m.nclass++
			m.class[k.b] = uint16(m.nclass)
		}
	}
	m.nclass++ // class 0
	if m.nnodes*m.nclass <= limit {
		m.buildDense()
	} else {
		m.buildSparse()
	}
	return m
}

// kidsOf returns the range of node u's children.
func (m *matcher) kidsOf(u int32) (first, end int32) {
	n := m.node(u)
	return n.first, n.first + n.n
}

// buildDense computes the complete table and the fail links together, in
// breadth-first order: a node's row is its fail state's row with its own
// children set, and a child's fail state is the transition of the node's
// fail state on the child's byte. A child's fail state is shallower, so its
// dictionary link is known when the child's is set, and each entry is
// written once in its final form (complemented when it reports).
func (m *matcher) buildDense() {
	w := m.nclass
	m.delta, m.free = newBuffer(4 * m.nnodes * w)
	for u := range int32(m.nnodes) {
		if u > 0 {
			f := int(m.node(u).fail)
			copy(m.delta[4*int(u)*w:4*int(u+1)*w], m.delta[4*f*w:4*(f+1)*w])
		}
		first, end := m.kidsOf(u)
		for i := first; i < end; i++ {
			k := m.kid(i)
			e := int(u)*w + int(m.class[k.b])
			v := m.node(k.to)
			if u > 0 {
				v.fail = m.entry(e)
				if v.fail < 0 {
					v.fail = ^v.fail
				}
				v.dict = m.dictLink(v.fail)
				m.setNode(k.to, v)
			}
			t := k.to
			if v.reports() {
				t = ^t
			}
			m.setEntry(e, t)
		}
	}
}

func (m *matcher) entry(e int) int32 { return int32(le32(m.delta, 4*e)) }

func (m *matcher) setEntry(e int, t int32) { put32(m.delta, 4*e, uint32(t)) }

// buildSparse computes the fail links by following fail links.
func (m *matcher) buildSparse() {
	for u := range int32(m.nnodes) {
		if u > 0 {
			first, end := m.kidsOf(u)
			for i := first; i < end; i++ {
				k := m.kid(i)
				f := m.node(u).fail
				v := m.node(k.to)
				for {
					if t, ok := m.step(f, k.b); ok && t != k.to {
						v.fail = t
						break
					}
					if f == 0 {
						v.fail = 0
						break
					}
					f = m.node(f).fail
				}
				m.setNode(k.to, v)
			}
			m.setDict(u)
		}
	}
}

// setDict sets the dictionary link of v, whose fail state's is set.
func (m *matcher) setDict(v int32) {
	n := m.node(v)
	n.dict = m.dictLink(n.fail)
	m.setNode(v, n)
}

// dictLink is the dictionary link of a node whose fail state is fail, that
// state's own link being set: fail itself when a pattern ends there.
func (m *matcher) dictLink(fail int32) int32 {
	if f := m.node(fail); f.out <= 0 {
		return f.dict
	}
	return fail
}

// reports tells whether some pattern ends in the node: its own, or one on
// its fail chain.
func (n acNode) reports() bool { return n.out > 0 || n.dict > 0 }

// release frees the matcher's memory; the matcher must not be used after.
func (m *matcher) release() {
	if m.free != nil {
		m.free()
		m.free, m.delta = nil, nil
	}
	m.nodes.release()
	m.kids.release()
}

// step returns the child of s on byte c. The root's table is complete: a
// missing child of the root is the root itself.
func (m *matcher) step(s int32, c byte) (int32, bool) {
	if s == 0 {
		return m.root[c], true
	}
	lo, hi := m.kidsOf(s)
	for lo < hi {
		mid := (lo + hi) / 2
		switch k := m.kid(mid); {
		case k.b == c:
			return k.to, true
		case k.b < c:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// empty reports whether the matcher has no pattern.
func (m *matcher) empty() bool { return m.nnodes <= 1 }

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
		if s == 0 || !m.node(s).reports() {
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
		t := int32(le32(delta, 4*(s*w+int(m.class[text[i]]))))
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
	n := m.node(s)
	if n.out == 0 {
		n = m.node(n.dict)
	}
	for {
		if !fn(end-int(n.out), end) {
			return false
		}
		if n.dict <= 0 {
			return true
		}
		n = m.node(n.dict)
	}
}

// stepFail follows fail links until a transition on c exists.
func (m *matcher) stepFail(s int32, c byte) int32 {
	for {
		if t, ok := m.step(s, c); ok {
			return t
		}
		s = m.node(s).fail
	}
}
