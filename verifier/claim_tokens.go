package verifier

import (
	"bytes"

	"github.com/privacycut/privacycut/receipts"
)

// token-consistency: per category, equal value ↔ equal token across the
// cut, and tokens of the plan's mode: irreversible tokens are
// redacted:<category>:<n>, n numbering the category's values by first
// appearance in the source; reversible tokens are
// pcv:<ns>:<category>:<mac> with one namespace, and each is the token the
// vault issued under the lease for its value, as the Issuer answers
// (checkIssued).

// tokenState checks token consistency across the whole cut. It stands for
// two maps per category, value → token and token → value: info holds the
// first, the token first paired with each value number; tokens numbers the
// (category, token) pairs seen, and tokVal gives the number of the value
// each first stood for (within one category, equal numbers mean equal
// values).
type tokenState struct {
	mode   string
	info   []tokenInfo // by value number
	tokens *byteTable
	tokVal []int32 // by token number
	ns     []byte  // the reversible namespace of the first token
}

// tokenInfo is the token first paired with one value.
type tokenInfo struct {
	tok int32 // its number in tokens
	has bool
	// clash records that the token table maps the token to another value.
	// The token table never changes an entry, so this holds for every later
	// slot that pairs the value with the same token.
	clash bool
	at    lazyWhere // the value's first slot in the export
}

// valueToken returns what is known of the token of value id.
func (ts *tokenState) valueToken(id int) *tokenInfo {
	for id >= len(ts.info) {
		ts.info = append(ts.info, tokenInfo{})
	}
	return &ts.info[id]
}

// token looks the token t of category cat up and returns its number: on
// its first appearance it is recorded as standing for value number v;
// later it clashes when it stood for another value.
func (ts *tokenState) token(cat int, t []byte, v int) (int, bool) {
	h := ts.tokens.hash(t)
	id, slot := ts.tokens.find(cat, t, h)
	if id < 0 {
		id = ts.tokens.insert(cat, t, h, slot)
		ts.tokVal = append(ts.tokVal, int32(v))
		return id, false
	}
	return id, int(ts.tokVal[id]) != v
}

// tokenSlots checks the owner slots of one paired record (spans ss of the
// source, es of the export text e): tokens must be consistent across the
// cut and of the plan's mode. ids are the value numbers of the source
// record's slots.
func (c *check) tokenSlots(p, line, eStart int, ss []span, e []byte, es []span, ids []int) {
	o, ts, vt := &c.out[cTokens], c.w.tokens, c.w.values
	k := 0
	var buf [maxIrreversibleLen]byte
	for i, sp := range ss {
		if sp.kind != spanValue {
			continue
		}
		ep := es[i]
		tv := e[ep.start:ep.end]
		cat := int(sp.cat)
		pos := lazyWhere{p, line, eStart, ep.start, ep.end - ep.start}
		id := ids[k]
		vi := ts.valueToken(id)
		switch {
		case !vi.has:
			t, clash := ts.token(cat, tv, id)
			vi.tok, vi.has, vi.clash, vi.at = int32(t), true, clash, pos
			if clash {
				o.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		case string(ts.tokens.bytes(int(vi.tok))) == string(tv):
			if vi.clash {
				o.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		default:
			o.fail("equal %s values have different tokens: %s", categories[cat], pos)
			if _, clash := ts.token(cat, tv, id); clash {
				o.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		}
		switch ts.mode {
		case receipts.ModeIrreversible:
			if !bytes.Equal(tv, appendIrreversible(buf[:0], cat, int(vt.n[id]))) {
				o.fail("token is not redacted:%s:<n> in order of first appearance: %s", categories[cat], pos)
			}
		case receipts.ModeReversible:
			ns, tc, ok := parseReversible(tv)
			switch {
			case !ok:
				o.fail("token is not a reversible token: %s", pos)
			case tc != cat:
				o.fail("token category differs from its slot: %s", pos)
			case ts.ns == nil:
				ts.ns = ns
			case !bytes.Equal(ns, ts.ns):
				o.fail("token namespace differs within the export: %s", pos)
			}
		}
		k++
	}
}

// tokenConsistency concludes the claim.
func (c *check) tokenConsistency(o *outcome) {
	w := &c.w
	if !w.walked || c.exp == nil {
		return
	}
	switch {
	case c.mode == receipts.ModeIrreversible && !w.sourceRecognized:
		o.fail("source not recognized: expected tokens unknown")
	case !w.paired:
		o.fail("owner slots could not all be paired with the source")
	case c.mode == receipts.ModeReversible && o.ok():
		// Only a cut whose tokens are otherwise in order is put to the
		// vault: a broken one fails without sending its values anywhere.
		c.checkIssued(o)
	}
	distinct := 0
	for i := range w.tokens.info {
		if w.tokens.info[i].has {
			distinct++
		}
	}
	o.facts = "mode=" + c.mode + " distinct_values=" + itoa(distinct)
	if c.mode == receipts.ModeReversible {
		o.facts += " issued=" + itoa(w.issued)
	}
}
