package rehydrate

import (
	"strconv"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// MaxReturnBytes is the largest return Validate accepts; a longer one is
// refused with LIMIT_EXCEEDED, never truncated.
const MaxReturnBytes = 64 << 20

// Issued is the view of a lease's issued tokens that the vault gives to
// recognition. The map itself never crosses it: Lookup answers for one
// exact token, AppendValue releases one value.
//
// The token slices passed to both methods are views into the parsed return;
// implementations must neither modify nor retain them. Recognition calls
// Lookup only for a string that is exactly token-shaped and carries the
// lease's namespace, and never for object keys or prose.
type Issued interface {
	// Lookup reports the category of an exact token this lease issued AND
	// that appeared in the disclosed export.
	Lookup(token []byte) (category string, ok bool)
	// AppendValue appends the token's raw value (UTF-8 bytes) to dst.
	AppendValue(dst []byte, token []byte) ([]byte, error)
}

// Lease is what recognition needs of the lease the return answers: its
// token namespace (10 characters of [a-z2-7]) and its purpose.
type Lease struct {
	Namespace string
	Purpose   string
}

// Plan is a validated return, ready to substitute. It holds the parsed
// return (tokens and prose, no value) and the places to substitute. A Plan
// is immutable: Apply may be called concurrently.
type Plan struct {
	root    *canon.Value
	schema  *node
	purpose string
	size    int    // length of the return
	sites   []site // the strings to substitute, in document order
	subs    map[string]int
	digest  string
}

// ReturnDigest returns receipts.SHA256 of the return as given: the
// quarantined-return digest a lease claim binds.
func (p *Plan) ReturnDigest() string { return p.digest }

// Substitutions returns how many substitutions Apply will make, per
// category. The map is a copy; categories without substitutions are absent.
func (p *Plan) Substitutions() map[string]int {
	m := make(map[string]int, len(p.subs))
	for k, v := range p.subs {
		m[k] = v
	}
	return m
}

// The fixed reasons of return refusals.
const (
	reasonWantObject    = "expected object"
	reasonWantArray     = "expected array"
	reasonWantString    = "expected string"
	reasonUnknownMember = "undeclared member"
	reasonMissing       = "missing required member"
	reasonTooMany       = "more items than maxItems"
	reasonTooLong       = "string longer than maxLength"
	reasonNotToken      = "not exactly a token"
	reasonOtherNS       = "token of another namespace"
	reasonTokenCategory = "token of another category"
	reasonNotIssued     = "token not issued by this lease or not disclosed"
	reasonIssuedOther   = "token issued under another category"
	reasonCardinality   = "more tokens than the marking's max at this schema path"
	reasonWrongPath     = "issued token at a path not marked for it"
)

// Return is a return parsed strictly, with its digest: the part of
// validation that needs neither schema nor lease. It lets a vault check the
// digest a claim names before it claims, without hashing the return twice.
type Return struct {
	data   []byte
	tree   *canon.Value
	err    error // the syntax refusal, reported by Validate
	digest string
}

// ParseReturn parses ret strictly while its digest is computed on another
// CPU. A syntax error is not returned here but kept for Validate, so that a
// caller can claim the lease (with Digest) before the refusal is reported,
// as it would be for any other refusal.
func ParseReturn(ret []byte) *Return {
	digest := make(chan string, 1)
	go func() { digest <- receipts.SHA256(ret) }()
	r := &Return{data: ret}
	r.tree, r.err = canon.Parse(ret, canon.Options{MaxBytes: MaxReturnBytes})
	r.digest = <-digest
	return r
}

// Digest returns receipts.SHA256 of the return as given.
func (r *Return) Digest() string { return r.digest }

// Validate checks a whole return against the schema and the recognition
// rules for lease l, without substituting anything and without reading any
// value. The first violation in document order refuses the whole return
// with a *receipts.Refusal; otherwise the Plan records what Apply will substitute.
//
// Non-refusal errors (ErrInvalidArgument, ErrInvalidLease) are caller bugs.
func Validate(ret []byte, s *Schema, l Lease, iss Issued) (*Plan, error) {
	if err := checkArgs(s, l, iss); err != nil {
		return nil, err
	}
	return ParseReturn(ret).validate(s, l, iss)
}

// Validate is the package-level Validate on a return already parsed.
func (r *Return) Validate(s *Schema, l Lease, iss Issued) (*Plan, error) {
	if err := checkArgs(s, l, iss); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, ErrInvalidArgument
	}
	return r.validate(s, l, iss)
}

// validate is Validate with its arguments checked.
func (r *Return) validate(s *Schema, l Lease, iss Issued) (*Plan, error) {
	if r.err != nil {
		if se, ok := r.err.(*canon.SyntaxError); ok {
			return nil, &receipts.Refusal{Code: receipts.Code(se.Class), Part: -1, Kind: "return", Line: se.Line, Column: se.Column, Length: se.Length, Reason: se.Reason}
		}
		return nil, &receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Kind: "return", Line: 1, Column: 1, Reason: "unreadable return"}
	}
	v := validator{data: r.data, lease: l, iss: iss, counts: make([]int, len(s.marked))}
	if err := v.walk(r.tree, s.root); err != nil {
		return nil, err
	}
	subs := map[string]int{}
	for i, n := range v.perCat {
		if n > 0 {
			subs[categories[i]] = n
		}
	}
	return &Plan{
		root: r.tree, schema: s.root, purpose: l.Purpose, size: len(r.data),
		sites: v.sites, subs: subs, digest: r.digest,
	}, nil
}

// checkArgs refuses the caller bugs Validate reports before any parsing.
func checkArgs(s *Schema, l Lease, iss Issued) error {
	if s == nil || s.root == nil || iss == nil {
		return ErrInvalidArgument
	}
	if !validNamespace(l.Namespace) || l.Purpose == "" {
		return ErrInvalidLease
	}
	return nil
}

// site is a string to substitute and its token's category.
type site struct {
	val *canon.Value
	cat uint8
}

// seg is one step of a concrete JSON path.
type seg struct {
	name  string // property name; "" for an array index
	index int
}

type validator struct {
	data   []byte
	lease  Lease
	iss    Issued
	counts []int // substitutions per marking
	perCat [len(categories)]int
	sites  []site
	path   []seg
}

// pathString renders the current path, e.g. "$.findings[2].owner_module".
func (v *validator) pathString() string {
	b := []byte{'$'}
	for _, s := range v.path {
		if s.name != "" {
			b = append(b, '.')
			b = append(b, s.name...)
			continue
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(s.index), 10)
		b = append(b, ']')
	}
	return string(b)
}

func (v *validator) refuse(code receipts.Code, off, length int, reason string) error {
	line, col := canon.LineCol(v.data, off)
	return &receipts.Refusal{Code: code, Part: -1, Kind: "return", Path: v.pathString(), Line: line, Column: col, Length: length, Reason: reason}
}

func (v *validator) refuseValue(code receipts.Code, val *canon.Value, reason string) error {
	return v.refuse(code, val.Off, val.End-val.Off, reason)
}

// marked reports whether n is marked for this lease's purpose.
func (n *node) markedFor(purpose string) bool {
	return n.mark != nil && n.mark.Purpose == purpose
}

func (v *validator) walk(val *canon.Value, n *node) error {
	switch n.kind {
	case kindObject:
		if val.Kind != canon.Object {
			return v.refuseValue(receipts.MalformedRecord, val, reasonWantObject)
		}
		req := 0
		for i := range val.Members {
			m := &val.Members[i]
			c := n.props[string(m.Key)]
			if c == nil {
				return v.refuse(receipts.MalformedRecord, m.KeyOff, literalEnd(v.data, m.KeyOff)-m.KeyOff, reasonUnknownMember)
			}
			if c.req {
				req++
			}
			v.path = append(v.path, seg{name: c.name})
			if err := v.walk(&m.Value, c); err != nil {
				return err
			}
			v.path = v.path[:len(v.path)-1]
		}
		if req < n.nreq {
			return v.refuseValue(receipts.MalformedRecord, val, reasonMissing)
		}
		return nil
	case kindArray:
		if val.Kind != canon.Array {
			return v.refuseValue(receipts.MalformedRecord, val, reasonWantArray)
		}
		for i := range val.Elems {
			v.path = append(v.path, seg{index: i})
			if n.maxItems >= 0 && i >= n.maxItems {
				return v.refuseValue(receipts.MalformedRecord, &val.Elems[i], reasonTooMany)
			}
			if err := v.walk(&val.Elems[i], n.items); err != nil {
				return err
			}
			v.path = v.path[:len(v.path)-1]
		}
		return nil
	}
	if val.Kind != canon.String {
		return v.refuseValue(receipts.MalformedRecord, val, reasonWantString)
	}
	if n.maxLength >= 0 && len(val.Str) > n.maxLength && utf8.RuneCount(val.Str) > n.maxLength {
		return v.refuseValue(receipts.MalformedRecord, val, reasonTooLong)
	}
	if !n.markedFor(v.lease.Purpose) {
		// Prose, or a string marked for another purpose: a string that is
		// exactly token-shaped is refused (another namespace's, one this
		// lease never issued, or an issued one out of place); nothing else
		// is examined or changed, and no substring is ever looked at.
		ns, _, ok := parseToken(val.Str)
		switch {
		case !ok:
			return nil
		case string(ns) != v.lease.Namespace:
			return v.refuseValue(receipts.TokenOtherNamespace, val, reasonOtherNS)
		}
		if _, issued := v.iss.Lookup(val.Str); issued {
			return v.refuseValue(receipts.TokenWrongPath, val, reasonWrongPath)
		}
		return v.refuseValue(receipts.TokenNotIssued, val, reasonNotIssued)
	}
	mk := n.mark
	ns, cat, ok := parseToken(val.Str)
	switch {
	case !ok:
		return v.refuseValue(receipts.TokenNotIssued, val, reasonNotToken)
	case string(ns) != v.lease.Namespace:
		return v.refuseValue(receipts.TokenOtherNamespace, val, reasonOtherNS)
	case categories[cat] != mk.Category:
		return v.refuseValue(receipts.TokenWrongCategory, val, reasonTokenCategory)
	}
	got, issued := v.iss.Lookup(val.Str)
	switch {
	case !issued:
		return v.refuseValue(receipts.TokenNotIssued, val, reasonNotIssued)
	case got != mk.Category:
		return v.refuseValue(receipts.TokenWrongCategory, val, reasonIssuedOther)
	}
	if v.counts[n.markIdx]++; v.counts[n.markIdx] > mk.Max {
		return v.refuseValue(receipts.TokenOverCardinality, val, reasonCardinality)
	}
	v.perCat[cat]++
	v.sites = append(v.sites, site{val: val, cat: uint8(cat)})
	return nil
}
