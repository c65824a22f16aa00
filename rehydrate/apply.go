package rehydrate

import (
	"errors"
	"fmt"
	"hash"
	"runtime"
	"slices"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Result is a rehydrated return.
type Result struct {
	// Output is the RFC 8785 canonical JSON of the return with every
	// substitution made. It holds restored owner values: the caller owns
	// it and should clear it when done.
	Output receipts.Plaintext
	// ReturnDigest is receipts.SHA256 of the return as given.
	ReturnDigest string
	// FinalDigest is receipts.SHA256 of Output.
	FinalDigest string
	// Substitutions counts the substitutions per category; categories
	// without substitutions are absent.
	Substitutions map[string]int

	// keyed is the keyed digest of Output under keyedWith, set by
	// ApplyKeyed for NewReceipt.
	keyed     string
	keyedWith *receipts.EvidenceKey
}

// Rehydrate validates a return (Validate) and, only if nothing is refused,
// substitutes it (Plan.Apply). On any error the Result is empty: a refused
// return never yields output.
func Rehydrate(ret []byte, s *Schema, l Lease, iss Issued) (Result, error) {
	p, err := Validate(ret, s, l, iss)
	if err != nil {
		return Result{}, err
	}
	return p.Apply(iss)
}

// Apply substitutes every planned token with its value from iss and writes
// the canonical output. iss must answer as it did at Validate: a token no
// longer issued under its category, a value that is empty or not UTF-8, or
// an error from AppendValue discards everything written so far (it is
// cleared) and returns an empty Result.
//
// Each value is read twice, once to size the output and once to write it,
// so that the output is allocated once and no grown-out copy of a value is
// left behind; the buffer that receives values is cleared after each one.
// Slices returned by AppendValue become owned by Apply, which clears them.
func (p *Plan) Apply(iss Issued) (Result, error) { return p.apply(iss, nil) }

// ApplyKeyed is Apply that also computes the keyed digest of the output
// under key while writing it, so that NewReceipt, given the same key, need
// not hash the output again.
func (p *Plan) ApplyKeyed(iss Issued, key *receipts.EvidenceKey) (Result, error) {
	if key == nil {
		return Result{}, ErrInvalidArgument
	}
	return p.apply(iss, key)
}

func (p *Plan) apply(iss Issued, key *receipts.EvidenceKey) (Result, error) {
	if p == nil || p.root == nil || iss == nil {
		return Result{}, ErrInvalidArgument
	}
	w := writer{iss: iss, purpose: p.purpose, scratch: make([]byte, 0, 256)}
	defer w.wipe()

	// Pass 1: check every token again and size the values.
	for _, st := range p.sites {
		if got, issued := iss.Lookup(st.val.Str); !issued || got != categories[st.cat] {
			return Result{}, ErrStalePlan
		}
		val, err := w.fetch(st.val.Str)
		if err != nil {
			return Result{}, err
		}
		w.budget += escLen(val)
		clear(val)
	}

	// Pass 2: write. Canonical output is never longer than the return
	// outside the substituted strings, and each substituted string is at
	// most its value's escaped length plus the two quotes its token's
	// literal already counted, so this capacity is never exceeded.
	out := make([]byte, 0, p.size+w.budget)
	w.out = out
	var keyed hash.Hash
	if key != nil {
		keyed = key.NewHMAC()
	}
	written, digests := make(chan int, 64), make(chan [2]string, 1)
	w.hashed = written
	go hashBehind(out[:cap(out)], written, keyed, digests)
	err := w.emit(p.root, p.schema)
	if err == nil && !sameArray(w.out, out) {
		err = errors.New("rehydrate: internal error: output outgrew its bound")
	}
	if err == nil {
		w.hashed <- len(w.out)
	}
	close(w.hashed)
	final := <-digests // the hasher no longer reads out
	if err != nil {
		clear(w.out[:cap(w.out)])
		clear(out[:cap(out)])
		return Result{}, err
	}
	return Result{
		Output:        w.out,
		ReturnDigest:  p.digest,
		FinalDigest:   final[0],
		Substitutions: p.Substitutions(),
		keyed:         final[1],
		keyedWith:     key,
	}, nil
}

// hashStep is how much output emit writes between two reports to the
// hasher.
const hashStep = 256 << 10

// hashBehind computes the output's digest (and, if keyed is not nil, its
// keyed digest) on another CPU while emit writes it: each length received
// on written is a prefix of out that emit will not touch again (it only
// appends, within out's capacity). It sends the digests of the last prefix
// received once written is closed.
//
// SHA-256 keeps the last partial block of what it hashed — up to 63 bytes
// of the output's tail, often the end of a restored value — in its state,
// and its Sum copies that state into a local. Both hashes' states and the
// stack below this frame are overwritten before the goroutine ends (best
// effort: see scrubStack).
func hashBehind(out []byte, written <-chan int, keyed hash.Hash, digests chan<- [2]string) {
	h := receipts.NewSHA256()
	done := 0
	for n := range written {
		receipts.WriteChunked(h, out[done:n])
		if keyed != nil {
			receipts.WriteChunked(keyed, out[done:n])
		}
		done = n
	}
	var d [2]string
	d[0] = receipts.FormatSHA256(h.Sum(nil))
	scrubHash(h)
	if keyed != nil {
		d[1] = receipts.FormatHMAC(keyed.Sum(nil))
		scrubHash(keyed)
	}
	scrubStack()
	digests <- d
}

// scrubHash overwrites the block buffer a hash keeps between writes: after
// a Reset the buffer is empty, and 63 zero bytes (less than a block) are
// copied into it over whatever tail it held. For an HMAC this is its inner
// hash; the outer one only ever holds the inner digest.
func scrubHash(h hash.Hash) {
	var zero [63]byte
	h.Reset()
	h.Write(zero[:])
	h.Reset()
}

// scrubStack overwrites 4 KiB of stack below the caller's frame, where
// Sum's copy of a hash state just was. Best effort: had the goroutine's
// stack grown in between, its old copy was freed unwiped; 4 KiB stays
// within a new goroutine's first stack.
//
//go:noinline
func scrubStack() {
	var buf [4 << 10]byte
	clearBytes(buf[:])
}

//go:noinline
func clearBytes(b []byte) {
	clear(b)
	runtime.KeepAlive(b)
}

type writer struct {
	iss     Issued
	purpose string
	scratch []byte // receives each value; cleared after use
	budget  int    // escaped length of all values, from pass 1
	used    int    // escaped length written so far
	out     []byte
	order   []member   // stack of objects' members being written
	hashed  chan<- int // lengths of out the hasher may read (hashBehind)
	sent    int        // the last length sent on hashed
}

// report tells the hasher about the output written so far, every hashStep
// bytes.
func (w *writer) report() {
	if len(w.out)-w.sent >= hashStep {
		w.sent = len(w.out)
		w.hashed <- w.sent
	}
}

func (w *writer) wipe() { clear(w.scratch[:cap(w.scratch)]) }

// sameArray reports whether a and b share their backing array's start.
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][0] == &b[:cap(b)][0]
}

// fetch reads the value of tok into the scratch buffer. If AppendValue had
// to grow the buffer, the old one is cleared.
func (w *writer) fetch(tok []byte) ([]byte, error) {
	val, err := w.iss.AppendValue(w.scratch[:0], tok)
	if !sameArray(val, w.scratch) {
		clear(w.scratch[:cap(w.scratch)])
		if cap(val) > 0 {
			w.scratch = val[:0]
		}
	}
	if err != nil {
		clear(val)
		return nil, fmt.Errorf("rehydrate: reading a token value: %w", err)
	}
	if len(val) == 0 || !utf8.Valid(val) {
		clear(val)
		return nil, ErrInvalidValue
	}
	return val, nil
}

// escLen returns the length of b as the inside of a canonical JSON string
// (RFC 8785 escapes: two bytes for " \ \b \f \n \r \t, six for other
// controls).
func escLen(b []byte) int {
	n := len(b)
	for _, c := range b {
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// emit writes val, validated against n, in canonical form. Object keys are
// declared property names (ASCII letters, digits, '_' and '-'): they need no
// escaping and their byte order, precomputed as ranks, is RFC 8785's.
func (w *writer) emit(val *canon.Value, n *node) error {
	switch n.kind {
	case kindObject:
		ms := val.Members
		base := len(w.order)
		for i := range ms {
			c := n.props[string(ms[i].Key)]
			w.order = append(w.order, member{rank: c.rank, val: &ms[i].Value, n: c})
		}
		order := w.order[base:]
		sortMembers(order)
		w.out = append(w.out, '{')
		for j := range order {
			if j > 0 {
				w.out = append(w.out, ',')
			}
			c := order[j].n
			w.out = append(w.out, '"')
			w.out = append(w.out, c.name...)
			w.out = append(w.out, '"', ':')
			if err := w.emit(order[j].val, c); err != nil {
				return err
			}
		}
		clear(order)
		w.order = w.order[:base]
		w.out = append(w.out, '}')
		return nil
	case kindArray:
		w.out = append(w.out, '[')
		for i := range val.Elems {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			if err := w.emit(&val.Elems[i], n.items); err != nil {
				return err
			}
			w.report()
		}
		w.out = append(w.out, ']')
		return nil
	}
	if !n.markedFor(w.purpose) {
		var err error
		w.out, err = val.AppendCanonical(w.out)
		return err
	}
	v, err := w.fetch(val.Str)
	if err != nil {
		return err
	}
	defer clear(v)
	if w.used += escLen(v); w.used > w.budget {
		return ErrStalePlan
	}
	s := canon.Value{Kind: canon.String, Str: v}
	w.out, err = s.AppendCanonical(w.out)
	return err
}

// member is an object member to write, with the rank of its name.
type member struct {
	rank int
	val  *canon.Value
	n    *node
}

// sortMembers orders members by the rank of their names: insertion sort
// for the small objects returns are made of, a full sort for large ones.
func sortMembers(order []member) {
	if len(order) > 12 {
		slices.SortFunc(order, func(a, b member) int { return a.rank - b.rank })
		return
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && order[j-1].rank > order[j].rank; j-- {
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
}
