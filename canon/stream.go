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
