package verifier

import (
	"context"
	"errors"

	"github.com/privacycut/privacycut/receipts"
)

// Issuer answers, for the tokens of a reversible cut, whether each is the
// token the vault issued under a lease for its (category, value): the
// verifier cannot tell, since tokens are keyed under a per-lease key only
// the vault holds. The vault's client implements it; package verifier takes
// its answer on trust.
//
// Issued is given the lease and the distinct (category, value) pairs of the
// cut's source in order of first appearance, each with the token the export
// holds for it; it returns one answer per pair, in order, or an error when
// it cannot answer (an *IssuerError saying why, or ErrIssuerUnavailable).
// The values are owner values: an Issuer sends them only sealed to the
// vault, keeps no copy and writes them nowhere; the verifier clears them
// when Issued returns.
type Issuer interface {
	Issued(ctx context.Context, lease string, pairs []Pair) (ok []bool, err error)
}

// Pair is one distinct owner value of a reversible cut, with the token the
// export holds for it.
type Pair struct {
	Category string             // an owner category, as in the projection
	Value    receipts.Plaintext // the value as it reads (escapes resolved)
	Token    string
}

// ErrIssuerUnavailable is what an Issuer returns when its vault cannot be
// reached.
var ErrIssuerUnavailable = errors.New("verifier: token issuer unavailable")

// IssuerError is an Issuer's refusal to answer, for a reason its refusal
// code names: LEASE_NOT_ACTIVE for a lease that has ended, say. The
// verification names the code and nothing else of the error.
type IssuerError struct {
	Code receipts.Code
}

func (e *IssuerError) Error() string { return "verifier: token issuer refused: " + string(e.Code) }

// issuerFailure names, content-free, why an Issuer gave no answer: the code
// of an *IssuerError, unavailability, the context's end, or nothing more.
func issuerFailure(err error) string {
	var ie *IssuerError
	switch {
	case errors.As(err, &ie) && ie.Code.Valid():
		return "refused " + string(ie.Code)
	case errors.Is(err, ErrIssuerUnavailable):
		return "unavailable"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	}
	return "no answer"
}

// checkIssued asks the Issuer whether each token of a reversible cut is the
// one issued for its slot's value (token-consistency). It is called once
// the walk has paired every record, so that every value has a token.
func (c *check) checkIssued(o *outcome) {
	w := &c.w
	switch {
	case c.req.Issuer == nil:
		o.fail("reversible tokens not checked against their issuer: no issuer given")
		return
	case c.req.Lease == "":
		o.fail("reversible tokens not checked against their issuer: no lease given")
		return
	}
	vt, ts := w.values, w.tokens
	n := vt.len()
	// The values as they read, in one buffer cleared when the call returns.
	size := 0
	for id := range n {
		size += len(vt.bytes(id))
	}
	buf := make([]byte, 0, size)
	defer clear(buf[:cap(buf)])
	pairs := make([]Pair, n)
	for id := range n {
		info := &ts.info[id]
		if !info.has {
			o.fail("a value without a token: the tokens cannot be checked against their issuer")
			return
		}
		start := len(buf)
		buf = unescapeValue(buf, vt.bytes(id))
		pairs[id] = Pair{
			Category: categories[vt.tag(id)],
			Value:    receipts.Plaintext(buf[start:len(buf):len(buf)]),
			Token:    string(ts.tokens.bytes(int(info.tok))),
		}
	}
	ok, err := c.req.Issuer.Issued(c.ctx, c.req.Lease, pairs)
	switch {
	case err != nil:
		o.fail("token issuer: %s; reversible tokens not checked", issuerFailure(err))
		return
	case len(ok) != n:
		o.fail("token issuer answered for %d of %d values; reversible tokens not checked", len(ok), n)
		return
	}
	for id, issued := range ok {
		if !issued {
			o.fail("%s token not issued under the lease for its value: %s", categories[vt.tag(id)], ts.info[id].at)
		}
	}
	c.w.issued = len(ok)
}

// Granted is an Issuer that answers from a vault's grant reply, for a cut
// verified by the program that was just granted its tokens: Tokens are the
// tokens the vault issued under Lease for the distinct (category, value)
// pairs the program sent it, in order of first appearance, one each. A
// token is issued for a pair when it is the grant's token at the pair's
// place, the verifier deriving the pairs, in that same order, from the
// source. It answers without seeing a value. It is as trustworthy as the
// program that holds it: it catches a censor that wrote a token at another
// value's slot, or in another order, not a program that lies about its
// grant (an Issuer that asks the vault does).
type Granted struct {
	Lease  string
	Tokens []string
}

var _ Issuer = (*Granted)(nil)

// Issued answers each pair: its token is the grant's token at its place,
// under the grant's lease.
func (g *Granted) Issued(_ context.Context, lease string, pairs []Pair) ([]bool, error) {
	ok := make([]bool, len(pairs))
	if lease != g.Lease || len(pairs) != len(g.Tokens) {
		return ok, nil
	}
	for i, p := range pairs {
		ok[i] = p.Token == g.Tokens[i]
	}
	return ok, nil
}
