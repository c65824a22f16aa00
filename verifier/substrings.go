package verifier

// substrings is the suffix automaton of a text: whether a pattern occurs in
// the text is answered in time linear in the pattern, after a construction
// linear in the text. It stands where an automaton of the patterns would
// when the text is short and the patterns many (the strings a rendered
// wire body adds to the export's texts, against every owner value).
//
// State 0 is the empty string; a state's edges are few and kept in a short
// list. The text is at most a few KiB here, so offsets fit in int32.
type substrings struct {
	states []saState
}

type saState struct {
	len, link int32
	edges     []saEdge
}

type saEdge struct {
	b  byte
	to int32
}

func (s *saState) next(b byte) int32 {
	for _, e := range s.edges {
		if e.b == b {
			return e.to
		}
	}
	return -1
}

func (s *saState) set(b byte, to int32) {
	for i := range s.edges {
		if s.edges[i].b == b {
			s.edges[i].to = to
			return
		}
	}
	s.edges = append(s.edges, saEdge{b, to})
}

// newSubstrings builds the automaton of text.
func newSubstrings(text []byte) *substrings {
	a := &substrings{states: make([]saState, 1, 2*len(text)+1)}
	a.states[0].link = -1
	last := int32(0)
	for _, c := range text {
		cur := int32(len(a.states))
		a.states = append(a.states, saState{len: a.states[last].len + 1})
		p := last
		for p >= 0 && a.states[p].next(c) < 0 {
			a.states[p].set(c, cur)
			p = a.states[p].link
		}
		switch {
		case p < 0:
			a.states[cur].link = 0
		case a.states[a.states[p].next(c)].len == a.states[p].len+1:
			a.states[cur].link = a.states[p].next(c)
		default:
			q := a.states[p].next(c)
			clone := int32(len(a.states))
			a.states = append(a.states, saState{len: a.states[p].len + 1, link: a.states[q].link,
				edges: append([]saEdge(nil), a.states[q].edges...)})
			for p >= 0 && a.states[p].next(c) == q {
				a.states[p].set(c, clone)
				p = a.states[p].link
			}
			a.states[q].link, a.states[cur].link = clone, clone
		}
		last = cur
	}
	return a
}

// contains reports whether pattern occurs in the text.
func (a *substrings) contains(pattern []byte) bool {
	s := int32(0)
	for _, c := range pattern {
		if s = a.states[s].next(c); s < 0 {
			return false
		}
	}
	return true
}
