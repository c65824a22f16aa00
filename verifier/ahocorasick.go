package verifier

import (
	"slices"
)

// matcher is an Aho–Corasick automaton over byte patterns: one pass over a
// text finds every occurrence of every pattern, whatever their number.
type matcher struct {
	nodes []acNode
	kids  []acKid
	root  [256]int32 // complete transition table of the root
	// delta is the complete transition table of every state (state<<8 |
	// byte), built when the automaton is small enough: one lookup per byte.
	// A transition into a state where some pattern ends is stored
	// complemented (^state, negative), so that the scan tests one sign.
	delta []int32
}

// denseMax is the largest automaton that gets a complete transition table
// (256 int32 per state: 16 MiB at most).
const denseMax = 1 << 14

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
func newMatcher(patterns [][]byte) *matcher {
	type tmpNode struct {
		kids []acKid
		out  int32
	}
	tmp := []tmpNode{{}}
	for _, p := range patterns {
		if len(p) == 0 {
			continue
		}
		s := int32(0)
		for _, c := range p {
			next := int32(-1)
			for _, k := range tmp[s].kids {
				if k.b == c {
					next = k.to
					break
				}
			}
			if next < 0 {
				next = int32(len(tmp))
				tmp = append(tmp, tmpNode{})
				tmp[s].kids = append(tmp[s].kids, acKid{c, next})
			}
			s = next
		}
		tmp[s].out = int32(len(p))
	}
	m := &matcher{nodes: make([]acNode, len(tmp))}
	for i := range tmp {
		slices.SortFunc(tmp[i].kids, func(a, b acKid) int { return int(a.b) - int(b.b) })
		m.nodes[i] = acNode{first: int32(len(m.kids)), n: int32(len(tmp[i].kids)), out: tmp[i].out, dict: -1}
		m.kids = append(m.kids, tmp[i].kids...)
	}
	// Breadth-first: fail links and dictionary links.
	queue := make([]int32, 0, len(m.nodes))
	order := make([]int32, 0, len(m.nodes))
	for _, k := range m.kids[m.nodes[0].first : m.nodes[0].first+m.nodes[0].n] {
		m.root[k.b] = k.to
		queue = append(queue, k.to)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		order = append(order, u)
		nu := m.nodes[u]
		for _, k := range m.kids[nu.first : nu.first+nu.n] {
			v := k.to
			f := nu.fail
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
			fv := m.nodes[v].fail
			if m.nodes[fv].out > 0 {
				m.nodes[v].dict = fv
			} else {
				m.nodes[v].dict = m.nodes[fv].dict
			}
			queue = append(queue, v)
		}
	}
	if len(m.nodes) <= denseMax {
		// Breadth-first order: a state's fail state is complete before it.
		m.delta = make([]int32, len(m.nodes)<<8)
		copy(m.delta, m.root[:])
		for _, u := range order {
			row := m.delta[int(u)<<8 : int(u+1)<<8]
			copy(row, m.delta[int(m.nodes[u].fail)<<8:int(m.nodes[u].fail+1)<<8])
			n := m.nodes[u]
			for _, k := range m.kids[n.first : n.first+n.n] {
				row[k.b] = k.to
			}
		}
		for i, t := range m.delta {
			if m.nodes[t].out > 0 || m.nodes[t].dict > 0 {
				m.delta[i] = ^t
			}
		}
	}
	return m
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

// scanDense is scan with the complete transition table: one lookup and one
// sign test per byte.
func (m *matcher) scanDense(text []byte, from, to int, fn func(start, end int) bool) {
	delta := m.delta
	s := int32(0)
	for i := from; i < to; i++ {
		t := delta[int(s)<<8|int(text[i])]
		if t >= 0 {
			s = t
			continue
		}
		s = ^t
		if !m.report(s, i+1, fn) {
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
