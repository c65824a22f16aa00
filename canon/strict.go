package canon

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// SyntaxError is the one error Parse, Unmarshal, Decode and Canonicalize
// return for a document they refuse. It locates the refusal but never carries
// the refused bytes: Reason is a fixed text chosen from a closed set and Path
// is built from the Go schema (field names from struct tags and array
// indices), never from keys or values read from the document.
type SyntaxError struct {
	// Class is MalformedRecord, InvalidUTF8 (raw invalid bytes or a lone
	// surrogate escape) or LimitExceeded (document size or nesting depth).
	Class Class
	// Offset is the byte offset of the offending token in the document.
	Offset int
	// Line and Column are 1-based; Column counts bytes and only LF ends a
	// line. Both are 0 when the document is not at hand (Value.Decode,
	// Value.Canonical): then only Offset locates the refusal.
	Line, Column int
	// Length is the length in bytes of the offending token, ≥ 1 when known
	// and 0 at the end of the document.
	Length int
	// Reason is a fixed, content-free description such as "duplicate key".
	Reason string
	// Path is the schema path of the Go value being decoded when the
	// refusal happened (e.g. "parts[3].label.class"), or "".
	Path string
}

func (e *SyntaxError) Error() string {
	b := make([]byte, 0, 64+len(e.Reason)+len(e.Path))
	b = append(b, "canon: json: "...)
	b = append(b, e.Reason...)
	if e.Line > 0 {
		b = append(b, " at line "...)
		b = strconv.AppendInt(b, int64(e.Line), 10)
		b = append(b, " col "...)
		b = strconv.AppendInt(b, int64(e.Column), 10)
	} else {
		b = append(b, " at offset "...)
		b = strconv.AppendInt(b, int64(e.Offset), 10)
	}
	if e.Path != "" {
		b = append(b, " in "...)
		b = append(b, e.Path...)
	}
	return string(b)
}

// The fixed reasons of syntax refusals.
const (
	reasonBOM          = "byte order mark"
	reasonTooLarge     = "document too large"
	reasonTooDeep      = "nesting too deep"
	reasonEOF          = "unexpected end of input"
	reasonUnexpected   = "unexpected character"
	reasonInvalidUTF8  = "invalid UTF-8"
	reasonTrailing     = "trailing data"
	reasonDuplicate    = "duplicate key"
	reasonExpectKey    = "expected object key"
	reasonExpectColon  = "expected ':' after object key"
	reasonExpectObjEnd = "expected ',' or '}' after object member"
	reasonExpectArrEnd = "expected ',' or ']' after array element"
	reasonExpectValue  = "expected value"
	reasonLiteral      = "invalid literal"
	reasonNumber       = "invalid number"
	reasonUnterminated = "unterminated string"
	reasonControl      = "control character in string"
	reasonEscape       = "invalid escape"
	reasonSurrogate    = "lone surrogate escape"
)

// LineCol returns the 1-based line and byte column of the offset off in
// data (clamped to data), as every position this module reports is given.
func LineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

func newSyntaxError(data []byte, code Class, off, length int, reason string) *SyntaxError {
	e := &SyntaxError{Class: code, Offset: off, Length: length, Reason: reason}
	if data != nil {
		e.Line, e.Column = LineCol(data, off)
	}
	return e
}

// Parse parses one strict JSON document into a tree.
//
// Parse refuses, and never repairs: invalid JSON syntax (RFC 8259); an object
// with two members whose keys are equal after unescaping; raw invalid UTF-8
// anywhere in the document; a \u escape that is a lone or mis-ordered
// surrogate; a raw control character (below U+0020) inside a string; a
// leading byte order mark; anything but white space after the value; nesting
// deeper than opt.MaxDepth; a document longer than opt.MaxBytes. Number
// literals are checked against the JSON grammar only; their magnitude is not
// limited here. Noncharacters and U+FFFD written literally are accepted.
//
// The first refusal in document order is returned as a *SyntaxError. The
// returned tree shares no memory with data.
func Parse(data []byte, opt Options) (*Value, error) {
	maxBytes, maxDepth := opt.limits()
	return parseInto(data, maxBytes, maxDepth, opt.Buffer)
}

// parse is Parse with explicit limits; maxDepth 0 admits scalars only.
func parse(data []byte, maxBytes int64, maxDepth int) (*Value, error) {
	return parseInto(data, maxBytes, maxDepth, nil)
}

// parseInto is parse with the strings of a large document decoded into
// buffers from alloc, when it is not nil.
func parseInto(data []byte, maxBytes int64, maxDepth int, alloc func(int) []byte) (*Value, error) {
	if int64(len(data)) > maxBytes {
		return nil, newSyntaxError(data, LimitExceeded, int(maxBytes), len(data)-int(maxBytes), reasonTooLarge)
	}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		return nil, newSyntaxError(data, MalformedRecord, 0, 3, reasonBOM)
	}
	p := parser{data: data, maxDepth: maxDepth, alloc: alloc}
	st := stackPool.Get().(*stacks)
	p.vals, p.mems = st.vals, st.mems
	defer func() {
		// The stacks are empty after a parse (each array and object
		// clears what it pops), except on an error; they go back to the
		// pool zeroed, so the pool never holds a pointer into a document.
		clear(p.vals)
		clear(p.mems)
		if cap(p.vals) <= maxPooledStack && cap(p.mems) <= maxPooledStack {
			st.vals, st.mems = p.vals[:0], p.mems[:0]
			stackPool.Put(st)
		}
	}()
	root := new(Value)
	i := p.skipSpace(0)
	var err error
	*root, i, err = p.value(i)
	if err != nil {
		return nil, err
	}
	if i = p.skipSpace(i); i < len(data) {
		return nil, p.unexpected(i, reasonTrailing)
	}
	return root, nil
}

// stacks are a parser's element and member stacks, kept between parses:
// a large document's longest array or object grows them once, not on
// every parse.
type stacks struct {
	vals []Value
	mems []Member
}

var stackPool = sync.Pool{New: func() any { return new(stacks) }}

// maxPooledStack bounds the stacks kept in the pool (in elements; about
// 16 MiB of members).
const maxPooledStack = 1 << 17

// parser holds the state of one Parse call.
type parser struct {
	data     []byte
	maxDepth int
	depth    int
	arena    []byte           // decoded strings; see room and grow
	alloc    func(int) []byte // Options.Buffer
	vals     []Value          // stack of array elements being collected
	mems     []Member         // stack of object members being collected
}

// arenaChunk is the size of the first chunk of decoded strings.
const arenaChunk = 16 << 10

func (p *parser) fail(code Class, off, length int, reason string) error {
	return newSyntaxError(p.data, code, off, length, reason)
}

// unexpected reports the byte at i as unexpected. Raw invalid UTF-8 is
// refused as InvalidUTF8 wherever it appears.
func (p *parser) unexpected(i int, reason string) error {
	if i >= len(p.data) {
		return p.fail(MalformedRecord, len(p.data), 0, reasonEOF)
	}
	if c := p.data[i]; c >= utf8.RuneSelf {
		r, size := utf8.DecodeRune(p.data[i:])
		if r == utf8.RuneError && size == 1 {
			return p.fail(InvalidUTF8, i, 1, reasonInvalidUTF8)
		}
		return p.fail(MalformedRecord, i, size, reason)
	}
	return p.fail(MalformedRecord, i, 1, reason)
}

func (p *parser) skipSpace(i int) int {
	for i < len(p.data) {
		switch p.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value parses the value starting at i, which is not white space.
func (p *parser) value(i int) (Value, int, error) {
	data := p.data
	if i >= len(data) {
		return Value{}, i, p.unexpected(i, reasonExpectValue)
	}
	switch c := data[i]; {
	case c == '"':
		s, next, err := p.str(i)
		return Value{Kind: String, Str: s, Off: i, End: next}, next, err
	case c == '{':
		return p.object(i)
	case c == '[':
		return p.array(i)
	case c == '-' || (c >= '0' && c <= '9'):
		next, err := p.number(i)
		if err != nil {
			return Value{}, next, err
		}
		return Value{Kind: Number, Num: string(data[i:next]), Off: i, End: next}, next, nil
	case c == 't':
		if bytes.HasPrefix(data[i:], []byte("true")) {
			return Value{Kind: Bool, Bool: true, Off: i, End: i + 4}, i + 4, nil
		}
	case c == 'f':
		if bytes.HasPrefix(data[i:], []byte("false")) {
			return Value{Kind: Bool, Off: i, End: i + 5}, i + 5, nil
		}
	case c == 'n':
		if bytes.HasPrefix(data[i:], []byte("null")) {
			return Value{Kind: Null, Off: i, End: i + 4}, i + 4, nil
		}
	default:
		return Value{}, i, p.unexpected(i, reasonExpectValue)
	}
	return Value{}, i, p.fail(MalformedRecord, i, 1, reasonLiteral)
}

func (p *parser) enter(i int) error {
	if p.depth >= p.maxDepth {
		return p.fail(LimitExceeded, i, 1, reasonTooDeep)
	}
	p.depth++
	return nil
}

// dupScan is the member count up to which duplicate keys are found by
// comparing with every earlier key; larger objects use a set.
const dupScan = 16

func (p *parser) object(start int) (Value, int, error) {
	if err := p.enter(start); err != nil {
		return Value{}, start, err
	}
	data := p.data
	base := len(p.mems)
	var seen map[string]struct{}
	i := p.skipSpace(start + 1)
	if i < len(data) && data[i] == '}' {
		p.depth--
		return Value{Kind: Object, Off: start, End: i + 1}, i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return Value{}, i, p.unexpected(i, reasonExpectKey)
		}
		keyOff := i
		key, next, err := p.str(i)
		if err != nil {
			return Value{}, next, err
		}
		n := len(p.mems) - base
		switch {
		case n < dupScan:
			for k := base; k < len(p.mems); k++ {
				if bytes.Equal(p.mems[k].Key, key) {
					return Value{}, keyOff, p.fail(MalformedRecord, keyOff, next-keyOff, reasonDuplicate)
				}
			}
		default:
			if seen == nil {
				seen = make(map[string]struct{}, 2*dupScan)
				for k := base; k < len(p.mems); k++ {
					seen[string(p.mems[k].Key)] = struct{}{}
				}
			}
			if _, dup := seen[string(key)]; dup {
				return Value{}, keyOff, p.fail(MalformedRecord, keyOff, next-keyOff, reasonDuplicate)
			}
			seen[string(key)] = struct{}{}
		}
		i = p.skipSpace(next)
		if i >= len(data) || data[i] != ':' {
			return Value{}, i, p.unexpected(i, reasonExpectColon)
		}
		i = p.skipSpace(i + 1)
		v, next, err := p.value(i)
		if err != nil {
			return Value{}, next, err
		}
		p.mems = append(p.mems, Member{Key: key, KeyOff: keyOff, Value: v})
		i = p.skipSpace(next)
		if i < len(data) && data[i] == ',' {
			i = p.skipSpace(i + 1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			break
		}
		return Value{}, i, p.unexpected(i, reasonExpectObjEnd)
	}
	members := make([]Member, len(p.mems)-base)
	copy(members, p.mems[base:])
	clear(p.mems[base:])
	p.mems = p.mems[:base]
	p.depth--
	return Value{Kind: Object, Members: members, Off: start, End: i + 1}, i + 1, nil
}

func (p *parser) array(start int) (Value, int, error) {
	if err := p.enter(start); err != nil {
		return Value{}, start, err
	}
	data := p.data
	base := len(p.vals)
	i := p.skipSpace(start + 1)
	if i < len(data) && data[i] == ']' {
		p.depth--
		return Value{Kind: Array, Off: start, End: i + 1}, i + 1, nil
	}
	for {
		v, next, err := p.value(i)
		if err != nil {
			return Value{}, next, err
		}
		p.vals = append(p.vals, v)
		i = p.skipSpace(next)
		if i < len(data) && data[i] == ',' {
			i = p.skipSpace(i + 1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			break
		}
		return Value{}, i, p.unexpected(i, reasonExpectArrEnd)
	}
	elems := make([]Value, len(p.vals)-base)
	copy(elems, p.vals[base:])
	clear(p.vals[base:])
	p.vals = p.vals[:base]
	p.depth--
	return Value{Kind: Array, Elems: elems, Off: start, End: i + 1}, i + 1, nil
}

// number scans the number literal starting at i and returns the offset just
// past it. The literal must follow RFC 8259:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (p *parser) number(i int) (int, error) {
	end, ok := scanNumber(p.data, i)
	if !ok || (end < len(p.data) && isNumberByte(p.data[end])) {
		length := end - i + 1
		if end >= len(p.data) {
			length = end - i
		}
		return end, p.fail(MalformedRecord, i, length, reasonNumber)
	}
	return end, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isNumberByte(c byte) bool {
	return isDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// scanNumber returns the end of the longest valid number prefix at data[i:]
// and whether one was found that the grammar completes there.
func scanNumber(data []byte, i int) (int, bool) {
	n := len(data)
	if i < n && data[i] == '-' {
		i++
	}
	switch {
	case i < n && data[i] == '0':
		i++
	case i < n && data[i] >= '1' && data[i] <= '9':
		i++
		for i < n && isDigit(data[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < n && data[i] == '.' {
		i++
		if i >= n || !isDigit(data[i]) {
			return i, false
		}
		for i < n && isDigit(data[i]) {
			i++
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n || !isDigit(data[i]) {
			return i, false
		}
		for i < n && isDigit(data[i]) {
			i++
		}
	}
	return i, true
}

// validNumber reports whether s is exactly one JSON number literal.
func validNumber(s string) bool {
	end, ok := scanNumber([]byte(s), 0)
	return ok && end == len(s)
}

// closingQuote returns the offset of the quote that closes the string whose
// content starts at start, or -1. A quote preceded by an odd number of
// backslashes is escaped. It is only used on the error path, to measure a
// key already known to be a valid string.
func closingQuote(data []byte, start int) int {
	i := start
	for {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			return -1
		}
		k += i
		n := 0
		for j := k - 1; j >= start && data[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return k
		}
		i = k + 1
	}
}

// Decoded strings are stored in an arena. The decoded bytes of all strings
// that start at or after offset i never exceed len(data)-i, because every
// escape is longer than what it decodes to. The first chunk is therefore at
// most arenaChunk bytes (and at most the rest of the document); when a
// string outgrows it, one buffer sized to the rest of the document takes
// that string and every later one. A document costs at most two
// allocations for its strings, holding at most arenaChunk+len(data) bytes,
// and no string is scanned twice.

// room returns an empty slice at the free end of the arena. Only the first
// chunk can fill up exactly: a buffer sized to the rest of the document
// always keeps room for at least the closing quote of its last string.
func (p *parser) room(i int) []byte {
	if len(p.arena) == cap(p.arena) {
		size := len(p.data) - i
		if p.arena == nil {
			size = min(arenaChunk, size)
		}
		p.arena = p.newArena(size)
	}
	l := len(p.arena)
	return p.arena[l:l]
}

// grow moves dst, being decoded at offset i, into a buffer that can hold
// the rest of the document's strings.
func (p *parser) grow(dst []byte, i int) []byte {
	b := p.newArena(len(dst) + len(p.data) - i)[:len(dst)]
	copy(b, dst)
	return b
}

// bufferMin is the smallest arena taken from Options.Buffer.
const bufferMin = 64 << 10

// newArena returns an empty arena of capacity n: from p.alloc when it is
// set and n is at least bufferMin, else from the heap.
func (p *parser) newArena(n int) []byte {
	if p.alloc != nil && n >= bufferMin {
		return p.alloc(n)[:0:n]
	}
	return make([]byte, 0, n)
}

// str decodes the string whose opening quote is at q. It returns the decoded
// bytes, capped so that appending to them never touches a neighbour, and the
// offset just past the closing quote.
func (p *parser) str(q int) ([]byte, int, error) {
	data := p.data
	i := q + 1
	dst := p.room(i)
	moved := false
	for {
		// Copy while testing: input is stored into the free end of the
		// buffer 16 bytes at a time and only the bytes before the first
		// '"', '\\' or control byte are kept. Stores past the kept length
		// land in free arena space.
		run := i
		n := len(dst)
		c, acc := copyPlain(dst[n:cap(dst)], data[i:])
		i, dst = i+c, dst[:n+c]
		// The rest of the run, near the end of input or of room.
		k, high := scanPlain(data, i)
		if (high || acc&msb != 0) && !utf8.Valid(data[run:k]) {
			return nil, k, p.fail(InvalidUTF8, firstInvalid(data, run, k), 1, reasonInvalidUTF8)
		}
		// Room for the rest of the run and, before a backslash, for what
		// the escape decodes to: at most 4 bytes and at most its raw
		// length minus one, which the closing quote bounds by
		// len(data)-k-2. After one grow this always fits.
		need := k - i
		if k < len(data) && data[k] == '\\' {
			need += max(0, min(utf8.UTFMax, len(data)-k-2))
		}
		if cap(dst)-len(dst) < need {
			dst, moved = p.grow(dst, i), true
		}
		dst = append(dst, data[i:k]...)
		if k >= len(data) {
			return nil, k, p.fail(MalformedRecord, q, len(data)-q, reasonUnterminated)
		}
		switch c := data[k]; {
		case c == '"':
			// dst is still the arena's free end unless grow moved it (or,
			// defensively, an append reallocated it).
			if moved || cap(dst) != cap(p.arena)-len(p.arena) {
				p.arena = dst
			} else {
				p.arena = p.arena[:len(p.arena)+len(dst)]
			}
			return dst[:len(dst):len(dst)], k + 1, nil
		case c == '\\':
			var err error
			dst, i, err = p.escape(dst, k)
			if err != nil {
				return nil, i, err
			}
		default:
			return nil, k, p.fail(MalformedRecord, k, 1, reasonControl)
		}
	}
}

// escape decodes the escape sequence whose backslash is at k, appends the
// decoded bytes to dst and returns the offset after the sequence.
func (p *parser) escape(dst []byte, k int) ([]byte, int, error) {
	data := p.data
	if k+1 >= len(data) {
		return dst, k, p.fail(MalformedRecord, k, len(data)-k, reasonEscape)
	}
	var b byte
	switch data[k+1] {
	case '"', '\\', '/':
		b = data[k+1]
	case 'b':
		b = '\b'
	case 'f':
		b = '\f'
	case 'n':
		b = '\n'
	case 'r':
		b = '\r'
	case 't':
		b = '\t'
	case 'u':
		r, ok := hex4(data, k+2)
		if !ok {
			return dst, k, p.fail(MalformedRecord, k, min(6, len(data)-k), reasonEscape)
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if k+7 < len(data) && data[k+6] == '\\' && data[k+7] == 'u' {
				if lo, ok := hex4(data, k+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					return utf8.AppendRune(dst, r), k + 12, nil
				}
			}
			return dst, k, p.fail(InvalidUTF8, k, 6, reasonSurrogate)
		case r >= 0xDC00 && r <= 0xDFFF:
			return dst, k, p.fail(InvalidUTF8, k, 6, reasonSurrogate)
		}
		return utf8.AppendRune(dst, r), k + 6, nil
	default:
		if data[k+1] >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(data[k+1:]); r == utf8.RuneError && size == 1 {
				return dst, k + 1, p.fail(InvalidUTF8, k+1, 1, reasonInvalidUTF8)
			}
		}
		return dst, k, p.fail(MalformedRecord, k, 2, reasonEscape)
	}
	return append(dst, b), k + 2, nil
}

// hex4 decodes four hexadecimal digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// firstInvalid returns the offset of the first invalid UTF-8 byte in
// data[i:k], which is known to hold one.
func firstInvalid(data []byte, i, k int) int {
	for i < k {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:k])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return k
}

// Word-at-a-time scanning. For a little-endian word w, special(w) has bit 7
// of a byte set where that byte is '"', '\\' or below 0x20; the lowest set
// bit is exact (higher ones may be false positives caused by borrows).
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// Each term is the classic zero-byte test (x-lsb)&^x&msb applied to
// w^'"', w^'\\' and (for bytes below 0x20) w itself; the three "&^x" share
// bit 7 with "&^w" because '"' and '\\' have bit 7 clear, so one suffices.
func special(w uint64) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	return ((q - lsb) | (b - lsb) | (w - lsb*0x20)) &^ w & msb
}

// copyPlain copies src to dst 16 bytes at a time, as far as both allow,
// stopping at the first '"', '\\' or control byte. It returns how many bytes
// before that point were copied and the OR of those bytes' words (bit 7 of
// any byte set means non-ASCII). dst may receive up to 15 bytes past the
// returned count; the caller owns that space. The caller finishes the run
// with scanPlain, which returns at once if copyPlain stopped on a special
// byte.
func copyPlain(dst, src []byte) (int, uint64) {
	n := min(len(dst), len(src)) &^ 15
	var acc uint64
	for i := 0; i < n; i += 16 {
		s, d := src[i:i+16:i+16], dst[i:i+16:i+16]
		w1 := binary.LittleEndian.Uint64(s[:8])
		w2 := binary.LittleEndian.Uint64(s[8:])
		binary.LittleEndian.PutUint64(d[:8], w1)
		binary.LittleEndian.PutUint64(d[8:], w2)
		m1, m2 := special(w1), special(w2)
		if m1|m2 != 0 {
			if m1 != 0 {
				c := bits.TrailingZeros64(m1) >> 3
				return i + c, acc | w1&(1<<(8*uint(c))-1)
			}
			c := bits.TrailingZeros64(m2) >> 3
			return i + 8 + c, acc | w1 | w2&(1<<(8*uint(c))-1)
		}
		acc |= w1 | w2
	}
	return n, acc
}

// scanPlain returns the offset of the first '"', '\\' or control byte at or
// after i (or len(data)), and whether any byte ≥ 0x80 precedes it.
func scanPlain(data []byte, i int) (int, bool) {
	var acc uint64
	for i+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[i:])
		if m := special(w); m != 0 {
			n := bits.TrailingZeros64(m) >> 3
			acc |= w & (1<<(8*uint(n)) - 1)
			return i + n, acc&msb != 0
		}
		acc |= w
		i += 8
	}
	for ; i < len(data); i++ {
		c := data[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		acc |= uint64(c)
	}
	return i, acc&msb != 0
}

// ---------------------------------------------------------------------------
// Typed strict decoding.

// ErrInvalidTarget is returned when Unmarshal or Decode is not given a
// non-nil pointer.
var ErrInvalidTarget = errors.New("canon: json: decode target must be a non-nil pointer")

// ErrUnsupportedType is wrapped by the error returned when a Go type cannot
// be decoded or encoded by this package (see the package documentation for
// the supported types). It names the Go type, never input.
var ErrUnsupportedType = errors.New("canon: json: unsupported Go type")

// The fixed reasons of decoding refusals.
const (
	reasonUnknownField = "unknown field"
	reasonWantObject   = "expected object"
	reasonWantArray    = "expected array"
	reasonWantString   = "expected string"
	reasonWantNumber   = "expected number"
	reasonWantBool     = "expected boolean"
	reasonWantInteger  = "expected integer"
	reasonIntRange     = "integer out of range"
	reasonNumRange     = "number out of range"
	reasonInvalidValue = "invalid value"
)

// MaxSafeInteger is the largest magnitude of an integer that Unmarshal stores
// in, and Marshal writes from, a Go integer: 2^53−1, the I-JSON limit. Every
// integer within it is exact as an IEEE-754 double, so it has one canonical
// form and a decoded value always agrees with the digest of its document.
const MaxSafeInteger = 1<<53 - 1

var (
	valueType       = reflect.TypeFor[Value]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	numberType      = reflect.TypeFor[json.Number]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType    = reflect.TypeFor[interface{ IsZero() bool }]()
)

// Unmarshal parses data strictly (see Parse) and stores the result in the
// value v points to, filling it itself; encoding/json never sees the bytes.
//
// Supported targets: structs (members matched to fields by the exact,
// case-sensitive json tag name, or the exact field name when untagged; a "-"
// tag skips the field; embedded structs are promoted like encoding/json does;
// a member with no matching field is refused as "unknown field"), pointers
// (null → nil, otherwise allocated), slices (null → nil), map[string]T,
// string, []byte, bool, every int and uint kind, float32, float64,
// json.Number, json.RawMessage, Value, *Value, any, and types implementing
// json.Unmarshaler or encoding.TextUnmarshaler.
//
//   - []byte is decoded from a JSON string as its UTF-8 bytes, NOT from
//     base64 as encoding/json does.
//   - Integers must be integer literals (no fraction, no exponent) within the
//     Go type's range and within ±MaxSafeInteger.
//   - json.Number keeps the literal as written; json.RawMessage receives the
//     RFC 8785 canonical form of the sub-value; Value and *Value receive the
//     subtree; any receives map[string]any, []any, string, json.Number, bool
//     or nil.
//   - A JSON null leaves a non-pointer bool, number, string or struct
//     unchanged (as encoding/json does) and sets pointers, slices, maps and
//     interfaces to nil.
//   - json.Unmarshaler receives the exact text of the sub-value (already
//     strictly valid); encoding.TextUnmarshaler receives the decoded string
//     and accepts only JSON strings. A JSON null calls neither and leaves
//     the value unchanged. Their errors are replaced by a content-free
//     "invalid value" refusal, because they may quote the input.
//
// A value of the wrong JSON kind is refused as MalformedRecord at the value;
// an unknown member at its key. Decoding stops at the first refusal and may
// leave v partly filled.
//
// Nothing in v shares memory with data. Byte slices (and Value subtrees)
// filled by one Unmarshal call may share a backing array with each other;
// each is capped to its length, so appending to one never changes another.
func Unmarshal(data []byte, v any, opt Options) error {
	rv, err := target(v)
	if err != nil {
		return err
	}
	maxBytes, maxDepth := opt.limits()
	tree, err := parse(data, maxBytes, maxDepth) // never into opt.Buffer
	if err != nil {
		return err
	}
	d := decoder{data: data, owned: true, path: make([]pathSeg, 0, 8)}
	return d.decode(tree, rv.Elem())
}

// Decode stores the value of the tree v in the value dst points to, with the
// rules of Unmarshal. The tree is not modified and dst shares no memory with
// it. Refusals carry the offsets recorded in the tree; Line and Column are 0.
func (v *Value) Decode(dst any) error {
	rv, err := target(dst)
	if err != nil {
		return err
	}
	d := decoder{path: make([]pathSeg, 0, 8)}
	return d.decode(v, rv.Elem())
}

// DecodeShared is Decode without copying: []byte results, Value and
// json.RawMessage targets alias the tree's memory. It is for a caller that
// keeps the tree for as long as the result and modifies neither (for
// example, a loaded projection whose canonical form is later derived from
// the same tree). It saves a copy of every large string.
func (v *Value) DecodeShared(dst any) error {
	rv, err := target(dst)
	if err != nil {
		return err
	}
	d := decoder{owned: true, path: make([]pathSeg, 0, 8)}
	return d.decode(v, rv.Elem())
}

func target(v any) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return reflect.Value{}, ErrInvalidTarget
	}
	if err := checkType(rv.Type().Elem(), modeDecode); err != nil {
		return reflect.Value{}, err
	}
	return rv, nil
}

// decoder fills Go values from a tree.
type decoder struct {
	data  []byte    // the document, or nil when only the tree is at hand
	owned bool      // the tree is private to this decoder: its slices may be moved into the result
	path  []pathSeg // schema path of the value being decoded
}

// pathSeg is one step of a schema path: a field name, an array index, or a
// map value (whose key comes from input and is never shown).
type pathSeg struct {
	name  string
	index int // ≥ 0: array index; -1: field name; -2: map value
}

func (d *decoder) pathString() string {
	var b []byte
	for _, s := range d.path {
		switch s.index {
		case -1:
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, s.name...)
		case -2:
			b = append(b, "[*]"...)
		default:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		}
	}
	return string(b)
}

func (d *decoder) refuse(off, length int, reason string) error {
	e := newSyntaxError(d.data, MalformedRecord, off, length, reason)
	e.Path = d.pathString()
	return e
}

func (d *decoder) refuseValue(v *Value, reason string) error {
	return d.refuse(v.Off, max(v.End-v.Off, 1), reason)
}

// keyLength returns the length of the raw key token at off.
func (d *decoder) keyLength(m *Member) int {
	if d.data != nil && m.KeyOff < len(d.data) {
		if end := closingQuote(d.data, m.KeyOff+1); end >= 0 {
			return end + 1 - m.KeyOff
		}
	}
	return len(m.Key) + 2
}

func (d *decoder) bytesOf(s []byte) []byte {
	if d.owned {
		return s
	}
	return bytes.Clone(s)
}

func (d *decoder) decode(v *Value, rv reflect.Value) error {
	t := rv.Type()
	switch t {
	case valueType:
		if d.owned {
			rv.Set(reflect.ValueOf(*v))
		} else {
			rv.Set(reflect.ValueOf(v.clone()))
		}
		return nil
	case rawMessageType:
		b, err := appendCanonical(nil, v, false, 0)
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				return d.refuse(se.Offset, se.Length, se.Reason)
			}
			return err
		}
		rv.SetBytes(b)
		return nil
	case numberType:
		switch v.Kind {
		case Null:
			return nil
		case Number:
			rv.SetString(v.Num)
			return nil
		}
		return d.refuseValue(v, reasonWantNumber)
	}
	if t.Kind() == reflect.Pointer {
		if v.Kind == Null {
			rv.SetZero()
			return nil
		}
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		return d.decode(v, rv.Elem())
	}
	if pt := reflect.PointerTo(t); pt.Implements(unmarshalerType) {
		if v.Kind == Null {
			return nil
		}
		var text []byte
		if d.data != nil {
			text = bytes.Clone(d.data[v.Off:v.End])
		} else {
			text = appendCompact(nil, v)
		}
		if err := rv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(text); err != nil {
			return d.refuseValue(v, reasonInvalidValue)
		}
		return nil
	} else if pt.Implements(textUnmarshaler) {
		switch v.Kind {
		case Null:
			return nil
		case String:
			if err := rv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(bytes.Clone(v.Str)); err != nil {
				return d.refuseValue(v, reasonInvalidValue)
			}
			return nil
		}
		return d.refuseValue(v, reasonWantString)
	}
	switch t.Kind() {
	case reflect.Interface:
		if v.Kind == Null {
			rv.SetZero()
			return nil
		}
		rv.Set(reflect.ValueOf(d.toAny(v)))
		return nil
	case reflect.Bool:
		switch v.Kind {
		case Null:
			return nil
		case Bool:
			rv.SetBool(v.Bool)
			return nil
		}
		return d.refuseValue(v, reasonWantBool)
	case reflect.String:
		switch v.Kind {
		case Null:
			return nil
		case String:
			rv.SetString(string(v.Str))
			return nil
		}
		return d.refuseValue(v, reasonWantString)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if err := d.integer(v); err != nil || v.Kind == Null {
			return err
		}
		i, err := strconv.ParseInt(v.Num, 10, 64)
		if err != nil || rv.OverflowInt(i) || i > MaxSafeInteger || i < -MaxSafeInteger {
			return d.refuseValue(v, reasonIntRange)
		}
		rv.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if err := d.integer(v); err != nil || v.Kind == Null {
			return err
		}
		u, err := strconv.ParseUint(v.Num, 10, 64)
		if err != nil || rv.OverflowUint(u) || u > MaxSafeInteger {
			return d.refuseValue(v, reasonIntRange)
		}
		rv.SetUint(u)
		return nil
	case reflect.Float32, reflect.Float64:
		switch v.Kind {
		case Null:
			return nil
		case Number:
			f, err := strconv.ParseFloat(v.Num, t.Bits())
			if err != nil {
				return d.refuseValue(v, reasonNumRange)
			}
			rv.SetFloat(f)
			return nil
		}
		return d.refuseValue(v, reasonWantNumber)
	case reflect.Slice:
		if v.Kind == Null {
			rv.SetZero()
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			if v.Kind != String {
				return d.refuseValue(v, reasonWantString)
			}
			rv.SetBytes(d.bytesOf(v.Str))
			return nil
		}
		if v.Kind != Array {
			return d.refuseValue(v, reasonWantArray)
		}
		s := reflect.MakeSlice(t, len(v.Elems), len(v.Elems))
		for i := range v.Elems {
			d.path = append(d.path, pathSeg{index: i})
			if err := d.decode(&v.Elems[i], s.Index(i)); err != nil {
				return err
			}
			d.path = d.path[:len(d.path)-1]
		}
		rv.Set(s)
		return nil
	case reflect.Map:
		if v.Kind == Null {
			rv.SetZero()
			return nil
		}
		if v.Kind != Object {
			return d.refuseValue(v, reasonWantObject)
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMapWithSize(t, len(v.Members)))
		}
		kt, et := t.Key(), t.Elem()
		for i := range v.Members {
			m := &v.Members[i]
			ev := reflect.New(et).Elem()
			d.path = append(d.path, pathSeg{index: -2})
			if err := d.decode(&m.Value, ev); err != nil {
				return err
			}
			d.path = d.path[:len(d.path)-1]
			rv.SetMapIndex(reflect.ValueOf(string(m.Key)).Convert(kt), ev)
		}
		return nil
	case reflect.Struct:
		switch v.Kind {
		case Null:
			return nil
		case Object:
		default:
			return d.refuseValue(v, reasonWantObject)
		}
		info, err := structInfoOf(t)
		if err != nil {
			return err
		}
		for i := range v.Members {
			m := &v.Members[i]
			fi, ok := info.byName[string(m.Key)]
			if !ok {
				return d.refuse(m.KeyOff, d.keyLength(m), reasonUnknownField)
			}
			f := &info.fields[fi]
			fv := fieldForSet(rv, f.index)
			d.path = append(d.path, pathSeg{name: f.name, index: -1})
			if err := d.decode(&m.Value, fv); err != nil {
				return err
			}
			d.path = d.path[:len(d.path)-1]
		}
		return nil
	}
	return fmt.Errorf("%w %v", ErrUnsupportedType, t)
}

// integer checks that v is null or an integer literal (no fraction, no
// exponent). A negative literal for an unsigned type fails its range check.
func (d *decoder) integer(v *Value) error {
	switch v.Kind {
	case Null:
		return nil
	case Number:
		if strings.ContainsAny(v.Num, ".eE") {
			return d.refuseValue(v, reasonWantInteger)
		}
		return nil
	}
	return d.refuseValue(v, reasonWantNumber)
}

// toAny converts a tree to the generic Go form.
func (d *decoder) toAny(v *Value) any {
	switch v.Kind {
	case Bool:
		return v.Bool
	case Number:
		return json.Number(v.Num)
	case String:
		return string(v.Str)
	case Array:
		s := make([]any, len(v.Elems))
		for i := range v.Elems {
			s[i] = d.toAny(&v.Elems[i])
		}
		return s
	case Object:
		m := make(map[string]any, len(v.Members))
		for i := range v.Members {
			m[string(v.Members[i].Key)] = d.toAny(&v.Members[i].Value)
		}
		return m
	}
	return nil
}

// fieldForSet returns the field at index, allocating nil embedded pointers
// on the way.
func fieldForSet(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// fieldForGet returns the field at index, or false when an embedded pointer
// on the way is nil.
func fieldForGet(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// ---------------------------------------------------------------------------
// Struct field plans, shared by decoding and encoding.

type fieldInfo struct {
	name      string // JSON member name
	key       []byte // canonical encoding of name followed by ':'
	index     []int  // reflect field index path (through embedded structs)
	typ       reflect.Type
	tagged    bool
	omitEmpty bool
	omitZero  bool
}

type structInfo struct {
	fields []fieldInfo    // in declaration order
	byName map[string]int // JSON name → index in fields
	order  []int          // fields in canonical (RFC 8785) member order
	err    error          // the type cannot be used
}

var structCache sync.Map // reflect.Type → *structInfo

func structInfoOf(t reflect.Type) (*structInfo, error) {
	if c, ok := structCache.Load(t); ok {
		si := c.(*structInfo)
		return si, si.err
	}
	si := buildStructInfo(t)
	c, _ := structCache.LoadOrStore(t, si)
	si = c.(*structInfo)
	return si, si.err
}

// buildStructInfo collects the JSON fields of t with the visibility rules of
// encoding/json: exported fields, json tags, promotion of untagged embedded
// structs, and among fields of the same name the shallowest wins, then the
// only tagged one; otherwise all are dropped.
func buildStructInfo(t reflect.Type) *structInfo {
	type level struct {
		typ   reflect.Type
		index []int
	}
	var fields []fieldInfo
	current := []level{}
	next := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count := map[reflect.Type]int{}
		for _, l := range current {
			count[l.typ]++
		}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := 0; i < l.typ.NumField(); i++ {
				sf := l.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				var omitEmpty, omitZero bool
				for opts != "" {
					var o string
					o, opts, _ = strings.Cut(opts, ",")
					switch o {
					case "omitempty":
						omitEmpty = true
					case "omitzero":
						omitZero = true
					case "string":
						return &structInfo{err: fmt.Errorf("%w %v: field %s: tag option \"string\"", ErrUnsupportedType, t, sf.Name)}
					}
				}
				index := append(append([]int(nil), l.index...), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					fields = append(fields, fieldInfo{
						name: name, index: index, typ: sf.Type,
						tagged: tagged, omitEmpty: omitEmpty, omitZero: omitZero,
					})
					if count[l.typ] > 1 {
						// The same struct embedded twice at this depth: its
						// fields annihilate each other; keep two copies so
						// that the dominance rule drops them.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				if sf.Type.Kind() == reflect.Pointer && !sf.IsExported() {
					return &structInfo{err: fmt.Errorf("%w %v: embedded pointer to unexported struct %v", ErrUnsupportedType, t, ft)}
				}
				next = append(next, level{typ: ft, index: index})
			}
		}
	}
	// Dominance: group by name, keep the shallowest, then the only tagged.
	slices.SortStableFunc(fields, func(a, b fieldInfo) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	kept := fields[:0:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		i = j
		if len(group) == 1 {
			kept = append(kept, group[0])
			continue
		}
		if len(group[0].index) == len(group[1].index) && group[0].tagged == group[1].tagged {
			continue // ambiguous: dropped
		}
		kept = append(kept, group[0])
	}
	slices.SortFunc(kept, func(a, b fieldInfo) int { return slices.Compare(a.index, b.index) })
	si := &structInfo{fields: kept, byName: make(map[string]int, len(kept)), order: make([]int, len(kept))}
	for i := range kept {
		si.byName[kept[i].name] = i
		k := appendCanonString(nil, []byte(kept[i].name))
		si.fields[i].key = append(k, ':')
		si.order[i] = i
	}
	slices.SortFunc(si.order, func(a, b int) int {
		return compareUTF16([]byte(kept[a].name), []byte(kept[b].name))
	})
	return si
}

// validTagName mirrors encoding/json's rule for usable tag names.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Static checks of Go types, so that a schema error shows on first use
// whatever the input.

type typeMode uint8

const (
	modeDecode typeMode = iota
	modeEncode
)

type typeKey struct {
	t    reflect.Type
	mode typeMode
}

var typeCache sync.Map // typeKey → error (nil stored as okType)

type okType struct{}

func checkType(t reflect.Type, mode typeMode) error {
	if c, ok := typeCache.Load(typeKey{t, mode}); ok {
		if err, isErr := c.(error); isErr {
			return err
		}
		return nil
	}
	err := walkType(t, mode, map[reflect.Type]bool{})
	if err != nil {
		typeCache.Store(typeKey{t, mode}, err)
	} else {
		typeCache.Store(typeKey{t, mode}, okType{})
	}
	return err
}

func walkType(t reflect.Type, mode typeMode, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t {
	case valueType, rawMessageType, numberType:
		return nil
	}
	if t.Kind() == reflect.Pointer {
		return walkType(t.Elem(), mode, seen)
	}
	pt := reflect.PointerTo(t)
	switch mode {
	case modeDecode:
		if pt.Implements(unmarshalerType) || pt.Implements(textUnmarshaler) {
			return nil
		}
	case modeEncode:
		if pt.Implements(marshalerType) || pt.Implements(textMarshaler) {
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Interface:
		if mode == modeDecode && t.NumMethod() != 0 {
			break
		}
		return nil
	case reflect.Slice:
		return walkType(t.Elem(), mode, seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		return walkType(t.Elem(), mode, seen)
	case reflect.Struct:
		si, err := structInfoOf(t)
		if err != nil {
			return err
		}
		for i := range si.fields {
			if err := walkType(si.fields[i].typ, mode, seen); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w %v", ErrUnsupportedType, t)
}
