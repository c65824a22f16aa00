package canon

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// hardMaxDepth bounds every recursion over a tree, whatever Options say, so
// that a hand-built cyclic tree cannot exhaust the stack.
const hardMaxDepth = 10000

// Canonicalize parses data strictly with the default Options (see Parse) and
// returns its RFC 8785 canonical form: no white space; object members sorted
// by the UTF-16 code units of their keys; strings with the minimal escapes;
// numbers written as ECMAScript writes the IEEE-754 double nearest to the
// literal. A number whose double is not finite (1e400) is refused.
//
// Two documents that differ only in white space, member order, string
// escapes or the spelling of equal doubles (1.0, 1e0, 10e-1) have the same
// canonical form.
func Canonicalize(data []byte) ([]byte, error) {
	maxBytes, maxDepth := Options{}.limits()
	tree, err := parse(data, maxBytes, maxDepth)
	if err != nil {
		return nil, err
	}
	out, err := appendCanonical(make([]byte, 0, len(data)), tree, true, 0)
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			se.Line, se.Column = LineCol(data, se.Offset)
		}
		return nil, err
	}
	return out, nil
}

// Canonical returns the RFC 8785 canonical form of the tree. See
// AppendCanonical.
func (v *Value) Canonical() ([]byte, error) {
	// A parsed tree's extent in its document is about the size of its
	// canonical form: the buffer then grows once at most.
	return v.AppendCanonical(make([]byte, 0, max(v.End-v.Off, 0)))
}

// AppendCanonical appends the RFC 8785 canonical form of the tree to dst.
//
// The tree is checked again while it is written, because it may have been
// built or changed by hand: invalid UTF-8 in a string or key, a number
// literal outside the JSON grammar or not finite as a double, two members
// with equal keys, an unknown Kind, or nesting deeper than 10000 are refused
// with a *SyntaxError at the offset recorded in the tree (Line and Column 0).
// On error dst is returned unchanged in length.
func (v *Value) AppendCanonical(dst []byte) ([]byte, error) {
	n := len(dst)
	out, err := appendCanonical(dst, v, false, 0)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

func treeError(code Class, off, length int, reason string) error {
	return &SyntaxError{Class: code, Offset: off, Length: length, Reason: reason}
}

// appendCanonical writes v canonically. trusted means the tree comes
// straight from parse, so strings, keys and literals need no re-validation.
func appendCanonical(dst []byte, v *Value, trusted bool, depth int) ([]byte, error) {
	switch v.Kind {
	case Null:
		return append(dst, "null"...), nil
	case Bool:
		if v.Bool {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case Number:
		if !trusted && !validNumber(v.Num) {
			return dst, treeError(MalformedRecord, v.Off, max(len(v.Num), 1), reasonNumber)
		}
		out, ok := appendCanonNumber(dst, v.Num)
		if !ok {
			return dst, treeError(MalformedRecord, v.Off, max(v.End-v.Off, 1), reasonNumRange)
		}
		return out, nil
	case String:
		if !trusted && !utf8.Valid(v.Str) {
			return dst, treeError(InvalidUTF8, v.Off, max(v.End-v.Off, 1), reasonInvalidUTF8)
		}
		return appendCanonString(dst, v.Str), nil
	case Array:
		if depth >= hardMaxDepth {
			return dst, treeError(LimitExceeded, v.Off, 1, reasonTooDeep)
		}
		dst = append(dst, '[')
		for i := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendCanonical(dst, &v.Elems[i], trusted, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case Object:
		if depth >= hardMaxDepth {
			return dst, treeError(LimitExceeded, v.Off, 1, reasonTooDeep)
		}
		ms := v.Members
		if !trusted {
			for i := range ms {
				if !utf8.Valid(ms[i].Key) {
					return dst, treeError(InvalidUTF8, ms[i].KeyOff, len(ms[i].Key)+2, reasonInvalidUTF8)
				}
			}
		}
		order, err := memberOrder(ms)
		if err != nil {
			return dst, err
		}
		dst = append(dst, '{')
		for n, i := range order {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonString(dst, ms[i].Key)
			dst = append(dst, ':')
			if dst, err = appendCanonical(dst, &ms[i].Value, trusted, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, treeError(MalformedRecord, v.Off, max(v.End-v.Off, 1), "unknown value kind")
}

// memberOrder returns the indices of ms in RFC 8785 order and refuses equal
// keys. Members already in order (the common case for documents written
// canonically) cost one comparison each.
func memberOrder(ms []Member) ([]int, error) {
	order := make([]int, len(ms))
	sorted := true
	for i := range ms {
		order[i] = i
		if i > 0 && sorted && compareUTF16(ms[i-1].Key, ms[i].Key) >= 0 {
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(order, func(a, b int) int { return compareUTF16(ms[a].Key, ms[b].Key) })
		for i := 1; i < len(order); i++ {
			if compareUTF16(ms[order[i-1]].Key, ms[order[i]].Key) == 0 {
				m := &ms[order[i]]
				if m.KeyOff < ms[order[i-1]].KeyOff {
					m = &ms[order[i-1]]
				}
				return nil, treeError(MalformedRecord, m.KeyOff, len(m.Key)+2, reasonDuplicate)
			}
		}
	}
	return order, nil
}

// compareUTF16 orders two UTF-8 strings by their UTF-16 code units, as RFC
// 8785 §3.2.3 requires. UTF-8 byte order equals code point order, which
// equals UTF-16 order except between U+E000..U+FFFF and supplementary
// characters (whose surrogates sort first), so only the first differing
// runes need a closer look.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	j := i
	for j > 0 && i-j < utf8.UTFMax && !utf8.RuneStart(a[j]) {
		j--
	}
	ra, _ := utf8.DecodeRune(a[j:])
	rb, _ := utf8.DecodeRune(b[j:])
	if ka, kb := utf16Key(ra), utf16Key(rb); ka != kb {
		return cmp.Compare(ka, kb)
	}
	return cmp.Compare(a[i], b[i])
}

// utf16Key maps a rune to its UTF-16 code units packed high-first.
func utf16Key(r rune) uint32 {
	if r >= 0x10000 {
		r -= 0x10000
		return uint32(0xD800+(r>>10))<<16 | uint32(0xDC00+(r&0x3FF))
	}
	return uint32(r) << 16
}

const hexDigits = "0123456789abcdef"

// appendCanonString writes s, which must be valid UTF-8, as a JSON string
// with the RFC 8785 escapes: \" \\ \b \f \n \r \t, other controls as \u00xx
// in lower-case hex, everything else literally.
func appendCanonString(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = appendCanonBody(dst, s)
	return append(dst, '"')
}

// appendCanonBody writes the escaped body of a JSON string, without quotes.
// Room for the unescaped bytes is reserved at once; escapes grow dst only
// when they do not fit, so a caller that sized dst exactly gets no copy.
func appendCanonBody(dst, s []byte) []byte {
	dst = slices.Grow(dst, len(s)+2)
	i := 0
	for {
		n := len(dst)
		c, _ := copyPlain(dst[n:cap(dst)], s[i:])
		i, dst = i+c, dst[:n+c]
		k, _ := scanPlain(s, i)
		dst = append(dst, s[i:k]...)
		if k >= len(s) {
			return dst
		}
		switch c := s[k]; c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i = k + 1
	}
}

// appendCanonNumber writes the valid JSON number literal lit as ECMAScript
// writes the nearest double. It reports false if that double is not finite.
func appendCanonNumber(dst []byte, lit string) ([]byte, bool) {
	// Integers of at most 15 digits are exact doubles below 1e21 and are
	// written as they are, except that -0 is 0.
	if digits := len(lit); digits <= 16 {
		plain := true
		if lit[0] == '-' {
			digits--
		}
		for i := 0; i < len(lit); i++ {
			if c := lit[i]; c == '.' || c == 'e' || c == 'E' {
				plain = false
				break
			}
		}
		if plain && digits <= 15 {
			if lit == "-0" {
				return append(dst, '0'), true
			}
			return append(dst, lit...), true
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	return appendES(dst, f), true
}

// appendES writes the finite double f like ECMAScript's
// Number.prototype.toString (ECMA-262 Number::toString, radix 10), which RFC
// 8785 §3.2.2.3 adopts: the shortest digits that round-trip, plain notation
// for decimal exponents in [-6, 21), otherwise d.ddde±x; -0 is written 0.
func appendES(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [24]byte
	k, exp := 0, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == 'e' {
			neg := b[i+1] == '-'
			for _, d := range b[i+2:] {
				exp = exp*10 + int(d-'0')
			}
			if neg {
				exp = -exp
			}
			break
		}
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	n := exp + 1 // the value is 0.d1d2…dk × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits[:k]...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:k]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits[:k]...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:k]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		} else {
			dst = append(dst, '-')
		}
		e := n - 1
		if e < 0 {
			e = -e
		}
		dst = strconv.AppendInt(dst, int64(e), 10)
	}
	return dst
}

// appendCompact writes the tree as JSON in document member order with
// number literals exactly as written. It is what a json.Unmarshaler receives
// when the document text is not at hand.
func appendCompact(dst []byte, v *Value) []byte {
	switch v.Kind {
	case Bool:
		if v.Bool {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		return append(dst, v.Num...)
	case String:
		return appendCanonString(dst, v.Str)
	case Array:
		dst = append(dst, '[')
		for i := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCompact(dst, &v.Elems[i])
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		for i := range v.Members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonString(dst, v.Members[i].Key)
			dst = append(dst, ':')
			dst = appendCompact(dst, &v.Members[i].Value)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// ---------------------------------------------------------------------------
// Marshal: canonical encoding of Go values.

// EncodeError is returned by Marshal for a Go value that has no canonical
// JSON form. It names the schema path and a fixed reason, never the value.
type EncodeError struct {
	Class  Class  // MalformedRecord, InvalidUTF8 or LimitExceeded
	Path   string // schema path of the offending value, "" for the top level
	Reason string // fixed, content-free description
}

func (e *EncodeError) Error() string {
	s := "canon: json: cannot encode: " + e.Reason
	if e.Path != "" {
		s += " in " + e.Path
	}
	return s
}

// maxDerefs bounds pointer and interface indirections in one Marshal call,
// which stops pointer cycles that never pass through a container.
const maxDerefs = 1 << 16

// Marshal returns the RFC 8785 canonical JSON encoding of v.
//
// The result is what encoding/json.Marshal followed by Canonicalize produces
// for the same value, with the Unmarshal rules made symmetric and every
// silent coercion of encoding/json turned into an *EncodeError:
//
//   - []byte (any slice of a uint8 kind) is written as a JSON string holding
//     those bytes, not base64, and must be valid UTF-8;
//   - strings, map keys and MarshalText output must be valid UTF-8
//     (encoding/json would replace invalid bytes with U+FFFD, making two
//     different values share one digest);
//   - integers must lie within ±MaxSafeInteger, where a double is exact;
//   - NaN and ±Inf are refused;
//   - nesting deeper than DefaultMaxDepth is refused, so every output parses
//     again with the default Options;
//   - MarshalJSON output is parsed strictly and canonicalized; json.Number
//     must be a valid literal ("" is 0, as in encoding/json);
//     json.RawMessage must be strictly valid JSON.
//
// Field selection (tags, omitempty, omitzero, "-", embedding) follows
// encoding/json. Errors of MarshalJSON and MarshalText are replaced by a
// content-free EncodeError. Types that cannot be encoded (channels,
// functions, complex numbers, Go arrays, maps with non-string keys) give an
// error wrapping ErrUnsupportedType.
func Marshal(v any) ([]byte, error) {
	if v != nil {
		if err := checkType(reflect.TypeOf(v), modeEncode); err != nil {
			return nil, err
		}
	}
	var e encoder
	return e.encode(nil, reflect.ValueOf(v))
}

type encoder struct {
	path   []pathSeg
	depth  int
	derefs int
}

func (e *encoder) fail(code Class, reason string) error {
	d := decoder{path: e.path}
	return &EncodeError{Class: code, Path: d.pathString(), Reason: reason}
}

func (e *encoder) enter() error {
	if e.depth >= DefaultMaxDepth {
		return e.fail(LimitExceeded, reasonTooDeep)
	}
	e.depth++
	return nil
}

func (e *encoder) deref() error {
	e.derefs++
	if e.derefs > maxDerefs {
		return e.fail(LimitExceeded, "too many indirections")
	}
	return nil
}

// fromTree writes a tree produced by the encoder's own inputs (RawMessage,
// MarshalJSON output, Value), mapping tree errors to EncodeErrors.
func (e *encoder) fromTree(dst []byte, v *Value, trusted bool, reason string) ([]byte, error) {
	out, err := appendCanonical(dst, v, trusted, 0)
	if err != nil {
		code := MalformedRecord
		if se, ok := err.(*SyntaxError); ok {
			code = se.Class
		}
		return dst, e.fail(code, reason)
	}
	return out, nil
}

// parseOwn strictly parses JSON produced by a RawMessage or MarshalJSON,
// leaving only the nesting depth that remains under DefaultMaxDepth.
func (e *encoder) parseOwn(data []byte, reason string) (*Value, error) {
	tree, err := parse(data, DefaultMaxBytes, DefaultMaxDepth-e.depth)
	if err != nil {
		code := MalformedRecord
		if se, ok := err.(*SyntaxError); ok {
			code = se.Class
		}
		return nil, e.fail(code, reason)
	}
	return tree, nil
}

func (e *encoder) encode(dst []byte, rv reflect.Value) ([]byte, error) {
	if !rv.IsValid() {
		return append(dst, "null"...), nil
	}
	t := rv.Type()
	switch t {
	case valueType:
		var tree Value
		if rv.CanAddr() {
			tree = *rv.Addr().Interface().(*Value)
		} else {
			tree = rv.Interface().(Value)
		}
		if e.depth+treeDepth(&tree, 0) > DefaultMaxDepth {
			return dst, e.fail(LimitExceeded, reasonTooDeep)
		}
		return e.fromTree(dst, &tree, false, "invalid Value")
	case rawMessageType:
		if rv.IsNil() {
			return append(dst, "null"...), nil
		}
		tree, err := e.parseOwn(rv.Bytes(), "invalid json.RawMessage")
		if err != nil {
			return dst, err
		}
		return e.fromTree(dst, tree, true, "invalid json.RawMessage")
	case numberType:
		s := rv.String()
		if s == "" {
			s = "0"
		}
		if !validNumber(s) {
			return dst, e.fail(MalformedRecord, "invalid json.Number")
		}
		out, ok := appendCanonNumber(dst, s)
		if !ok {
			return dst, e.fail(MalformedRecord, reasonNumRange)
		}
		return out, nil
	}
	if m, ok := e.method(rv, marshalerType); ok {
		if !m.IsValid() {
			return append(dst, "null"...), nil
		}
		out, err := m.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return dst, e.fail(MalformedRecord, "MarshalJSON failed")
		}
		tree, err := e.parseOwn(out, "invalid MarshalJSON output")
		if err != nil {
			return dst, err
		}
		return e.fromTree(dst, tree, true, "invalid MarshalJSON output")
	}
	if m, ok := e.method(rv, textMarshaler); ok {
		if !m.IsValid() {
			return append(dst, "null"...), nil
		}
		out, err := m.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return dst, e.fail(MalformedRecord, "MarshalText failed")
		}
		if !utf8.Valid(out) {
			return dst, e.fail(InvalidUTF8, reasonInvalidUTF8)
		}
		return appendCanonString(dst, out), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		if rv.Bool() {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return dst, e.fail(MalformedRecord, reasonIntRange)
		}
		return strconv.AppendInt(dst, n, 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := rv.Uint()
		if n > MaxSafeInteger {
			return dst, e.fail(MalformedRecord, reasonIntRange)
		}
		return strconv.AppendUint(dst, n, 10), nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, e.fail(MalformedRecord, reasonNumRange)
		}
		if t.Kind() == reflect.Float32 {
			// encoding/json writes the shortest float32 digits, which
			// Canonicalize then reads as a double.
			var buf [32]byte
			f, _ = strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], f, 'g', -1, 32)), 64)
		}
		return appendES(dst, f), nil
	case reflect.String:
		s := rv.String()
		if !utf8.ValidString(s) {
			return dst, e.fail(InvalidUTF8, reasonInvalidUTF8)
		}
		return appendCanonString(dst, []byte(s)), nil
	case reflect.Interface:
		if rv.IsNil() {
			return append(dst, "null"...), nil
		}
		if err := e.deref(); err != nil {
			return dst, err
		}
		return e.encode(dst, rv.Elem())
	case reflect.Pointer:
		if rv.IsNil() {
			return append(dst, "null"...), nil
		}
		if err := e.deref(); err != nil {
			return dst, err
		}
		return e.encode(dst, rv.Elem())
	case reflect.Slice:
		if rv.IsNil() {
			return append(dst, "null"...), nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			b := rv.Bytes()
			if !utf8.Valid(b) {
				return dst, e.fail(InvalidUTF8, reasonInvalidUTF8)
			}
			return appendCanonString(dst, b), nil
		}
		if err := e.enter(); err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			e.path = append(e.path, pathSeg{index: i})
			var err error
			if dst, err = e.encode(dst, rv.Index(i)); err != nil {
				return dst, err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.depth--
		return append(dst, ']'), nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		if rv.IsNil() {
			return append(dst, "null"...), nil
		}
		if err := e.enter(); err != nil {
			return dst, err
		}
		type entry struct {
			key []byte
			val reflect.Value
		}
		entries := make([]entry, 0, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := []byte(it.Key().String())
			if !utf8.Valid(k) {
				e.path = append(e.path, pathSeg{index: -2})
				return dst, e.fail(InvalidUTF8, reasonInvalidUTF8)
			}
			entries = append(entries, entry{k, it.Value()})
		}
		slices.SortFunc(entries, func(a, b entry) int { return compareUTF16(a.key, b.key) })
		dst = append(dst, '{')
		for i, en := range entries {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonString(dst, en.key)
			dst = append(dst, ':')
			e.path = append(e.path, pathSeg{index: -2})
			var err error
			if dst, err = e.encode(dst, en.val); err != nil {
				return dst, err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.depth--
		return append(dst, '}'), nil
	case reflect.Struct:
		info, err := structInfoOf(t)
		if err != nil {
			return dst, err
		}
		if err := e.enter(); err != nil {
			return dst, err
		}
		dst = append(dst, '{')
		first := true
		for _, i := range info.order {
			f := &info.fields[i]
			fv, ok := fieldForGet(rv, f.index)
			if !ok || (f.omitEmpty && isEmptyValue(fv)) || (f.omitZero && isZeroValue(fv)) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, f.key...)
			e.path = append(e.path, pathSeg{name: f.name, index: -1})
			if dst, err = e.encode(dst, fv); err != nil {
				return dst, err
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.depth--
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("%w %v", ErrUnsupportedType, t)
}

// method finds the implementation of iface for rv the way encoding/json
// does: through the address when rv is addressable and the pointer type
// implements it, otherwise on the value itself. It returns ok with an
// invalid Value when rv is a nil pointer or interface that implements iface.
func (e *encoder) method(rv reflect.Value, iface reflect.Type) (reflect.Value, bool) {
	t := rv.Type()
	if t.Kind() != reflect.Pointer && rv.CanAddr() && reflect.PointerTo(t).Implements(iface) {
		return rv.Addr(), true
	}
	if t.Implements(iface) {
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface) && rv.IsNil() {
			return reflect.Value{}, true
		}
		return rv, true
	}
	return reflect.Value{}, false
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZeroValue is encoding/json's omitzero test: the IsZero method when the
// type has one, reflect's zero test otherwise.
func isZeroValue(v reflect.Value) bool {
	t := v.Type()
	switch {
	case t.Implements(isZeroerType):
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface) && v.IsNil() {
			return true
		}
		return v.Interface().(interface{ IsZero() bool }).IsZero()
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(isZeroerType):
		if !v.CanAddr() {
			c := reflect.New(t).Elem()
			c.Set(v)
			v = c
		}
		return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
	}
	return v.IsZero()
}

// treeDepth returns the nesting depth of a tree, stopping early past the
// hard limit.
func treeDepth(v *Value, depth int) int {
	if depth > hardMaxDepth {
		return depth
	}
	deepest := depth
	switch v.Kind {
	case Array:
		deepest = depth + 1
		for i := range v.Elems {
			deepest = max(deepest, treeDepth(&v.Elems[i], depth+1))
		}
	case Object:
		deepest = depth + 1
		for i := range v.Members {
			deepest = max(deepest, treeDepth(&v.Members[i].Value, depth+1))
		}
	}
	return deepest
}
