package canon

import (
	"io"
	"unicode/utf8"
)

// streamChunk is how much of a long string is escaped at a time, and the
// size of WriteCanonical's buffer.
const streamChunk = 64 << 10

// WriteCanonical writes the RFC 8785 canonical form of the tree to w, exactly
// the bytes AppendCanonical would append, without building it in memory: a
// 64 MiB document is hashed through a 64 KiB buffer. It checks the tree as
// AppendCanonical does; on error, part of the output may have been written.
func (v *Value) WriteCanonical(w io.Writer) error {
	cw := &canonWriter{w: w, buf: make([]byte, 0, 2*streamChunk)}
	if err := cw.value(v, 0); err != nil {
		return err
	}
	return cw.flush()
}

type canonWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (c *canonWriter) flush() error {
	if c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
	}
	c.buf = c.buf[:0]
	return c.err
}

func (c *canonWriter) maybeFlush() error {
	if len(c.buf) >= streamChunk {
		return c.flush()
	}
	return c.err
}

func (c *canonWriter) value(v *Value, depth int) error {
	switch v.Kind {
	case String:
		return c.str(v)
	case Array:
		if depth >= hardMaxDepth {
			return treeError(LimitExceeded, v.Off, 1, reasonTooDeep)
		}
		c.buf = append(c.buf, '[')
		for i := range v.Elems {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			if err := c.value(&v.Elems[i], depth+1); err != nil {
				return err
			}
		}
		c.buf = append(c.buf, ']')
		return c.maybeFlush()
	case Object:
		if depth >= hardMaxDepth {
			return treeError(LimitExceeded, v.Off, 1, reasonTooDeep)
		}
		ms := v.Members
		for i := range ms {
			if !utf8.Valid(ms[i].Key) {
				return treeError(InvalidUTF8, ms[i].KeyOff, len(ms[i].Key)+2, reasonInvalidUTF8)
			}
		}
		order, err := memberOrder(ms)
		if err != nil {
			return err
		}
		c.buf = append(c.buf, '{')
		for n, i := range order {
			if n > 0 {
				c.buf = append(c.buf, ',')
			}
			c.buf = appendCanonString(c.buf, ms[i].Key)
			c.buf = append(c.buf, ':')
			if err := c.value(&ms[i].Value, depth+1); err != nil {
				return err
			}
		}
		c.buf = append(c.buf, '}')
		return c.maybeFlush()
	}
	out, err := appendCanonical(c.buf, v, false, depth)
	if err != nil {
		return err
	}
	c.buf = out
	return c.maybeFlush()
}

// str writes a string value in chunks. Every byte RFC 8785 escapes is a
// single ASCII byte, so a chunk boundary may fall anywhere, even inside a
// multi-byte character, without changing the output.
func (c *canonWriter) str(v *Value) error {
	s := v.Str
	if !utf8.Valid(s) {
		return treeError(InvalidUTF8, v.Off, max(v.End-v.Off, 1), reasonInvalidUTF8)
	}
	c.buf = append(c.buf, '"')
	for len(s) > 0 {
		n := min(len(s), streamChunk)
		c.buf = appendCanonBody(c.buf, s[:n])
		s = s[n:]
		if err := c.maybeFlush(); err != nil {
			return err
		}
	}
	c.buf = append(c.buf, '"')
	return c.maybeFlush()
}

// AppendStringBody appends the RFC 8785 escaped form of s — the bytes
// between the quotes of its canonical JSON string — to dst. s must be valid
// UTF-8. Producers that write canonical JSON directly (the censor's export)
// use it so that their bytes equal Canonicalize's.
func AppendStringBody(dst, s []byte) []byte { return appendCanonBody(dst, s) }

// CanonicalStringEnd reports whether data[i:] begins with a JSON string
// written exactly as RFC 8785 writes it — valid UTF-8, no raw control byte,
// and only the escapes appendCanonString uses — and returns the offset just
// past its closing quote. Such a string's bytes between the quotes are the
// AppendStringBody of its value, so a producer may copy them into another
// canonical document without decoding them.
func CanonicalStringEnd(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	start, high := i+1, false
	for i = start; ; {
		k, h := scanPlain(data, i)
		high = high || h
		if k >= len(data) {
			return 0, false
		}
		switch data[k] {
		case '"':
			if high && !utf8.Valid(data[start:k]) {
				return 0, false
			}
			return k + 1, true
		case '\\':
			n, ok := canonEscape(data, k)
			if !ok {
				return 0, false
			}
			i = k + n
		default: // a raw control byte
			return 0, false
		}
	}
}

// canonEscape returns the length of the escape at data[k] (a backslash) if
// it is one RFC 8785 writes: \" \\ \b \f \n \r \t, or \u00xx in lower-case
// hex for any other control byte.
func canonEscape(data []byte, k int) (int, bool) {
	if k+1 >= len(data) {
		return 0, false
	}
	switch data[k+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
	default:
		return 0, false
	}
	if k+6 > len(data) || data[k+2] != '0' || data[k+3] != '0' {
		return 0, false
	}
	hi, lo := data[k+4], data[k+5]
	var c byte
	switch {
	case hi != '0' && hi != '1':
		return 0, false
	case lo >= '0' && lo <= '9':
		c = (hi-'0')<<4 | (lo - '0')
	case lo >= 'a' && lo <= 'f':
		c = (hi-'0')<<4 | (lo - 'a' + 10)
	default:
		return 0, false
	}
	switch c {
	case '\b', '\f', '\n', '\r', '\t':
		return 0, false
	}
	return 6, true
}
