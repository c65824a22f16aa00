package verifier

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/privacycut/privacycut/receipts"
)

// The limits of closed-diagnostic@1. They refuse, never truncate.
const (
	// MaxRecordBytes is the longest record, not counting its LF.
	MaxRecordBytes = 64 << 10
	// MaxOwnersPerRecord is the largest number of owner slots in one record.
	MaxOwnersPerRecord = 64
	// MaxParts is the largest number of parts of a projection.
	MaxParts = 1 << 16
	// MaxPartTextBytes is the longest text of one part.
	MaxPartTextBytes = 256 << 20
)

// maxParts is MaxParts; tests lower it.
var maxParts = MaxParts

// categories is the closed set of owner categories, in the order the receipt
// operations list them. credential is last: it is never allowed.
var categories = [...]string{"module", "package", "function", "file", "team", "person", "host", "credential"}

const credential = 7

// categoryIndex returns the index of b in categories, or -1.
func categoryIndex(b []byte) int {
	for i, c := range categories {
		if string(b) == c {
			return i
		}
	}
	return -1
}

// spanKind classifies one span of a recognized record. Every byte of an
// accepted record lies in exactly one span.
type spanKind uint8

const (
	spanKeyword      spanKind = iota + 1 // "finding" or "ask"
	spanSep                              // one SP between productions, or the record's LF
	spanDiagnostic                       // vocabulary diagnostic
	spanModule                           // vocabulary module path
	spanAt                               // the "@" of a dependency
	spanVersion                          // vocabulary version of the module
	spanStatus                           // vocabulary status
	spanFixed                            // the literal "fixed="
	spanFixedVersion                     // vocabulary version of the module, after "fixed="
	spanCitation                         // vocabulary citation
	spanQuestion                         // vocabulary question
	spanOwnerKey                         // the literal "owner." and the category
	spanEq                               // the "=" after the category
	spanQuote                            // an owner quote
	spanValue                            // owner value as written between the quotes (escapes kept)
)

// public reports whether spans of kind k are vocabulary items.
func (k spanKind) public() bool {
	switch k {
	case spanDiagnostic, spanModule, spanVersion, spanStatus, spanFixedVersion, spanCitation, spanQuestion:
		return true
	}
	return false
}

// span is a byte range [start, end) of a part's text. cat is the category
// index of an owner key or value span, and -1 otherwise; id is set for
// vocabulary items.
type span struct {
	kind       spanKind
	cat        int8
	id         int32 // the item's number in the vocabulary, for public items
	start, end int
}

// refusal is one positioned refusal inside a part's text: a code, the byte
// offset and a length. It never holds the text.
type refusal struct {
	code   receipts.Code
	off    int
	length int
}

// recognizer is a byte-level state machine for closed-diagnostic@1. It reads
// one record at a time, walking the bytes once; vocabulary items are looked
// up in hash sets when the state that reads them ends.
type recognizer struct {
	voc *vocabulary
	// tokens is set when owner slots hold tokens (an export): the ambiguity
	// rules for owner values are then not applied.
	tokens    bool
	maxRecord int
	maxOwners int
	scratch   []byte
	// memo remembers the last item found for each kind of lookup. Two
	// recognizers over the same vocabulary may share one: the walk's export
	// recognizer then finds the item its source recognizer has just
	// looked up without hashing it again. The remembered items alias the
	// texts read, which must outlive the recognizers.
	memo *lookupMemo
	// values, when set (the walk's source recognizer), numbers every owner
	// value the recognizer accepts, and valueIDs are the numbers of the
	// value spans of the last record, in order. A value already in the
	// table passed the ambiguity rules before, which depend on its bytes
	// alone, and is not checked again.
	values   *valueTable
	valueIDs []int
}

func newRecognizer(voc *vocabulary, tokens bool) *recognizer {
	return &recognizer{voc: voc, tokens: tokens, maxRecord: MaxRecordBytes, maxOwners: MaxOwnersPerRecord, memo: new(lookupMemo)}
}

// lookupMemo holds, for each state that reads a vocabulary item, the last
// item found in the vocabulary in that state, with the module it was found
// under (for versions, -1 otherwise) and its number. The vocabulary never changes during a check, so an
// item equal to the remembered one (under the same module) is in it too.
// The slices alias texts that outlive the recognizers.
type lookupMemo struct {
	item [stValue + 1][]byte
	mod  [stValue + 1]int // the module's number, for versions; -1 otherwise
	id   [stValue + 1]int // the item's number
}

// The states of the record machine.
type state uint8

const (
	stKeyword state = iota
	stDiagnostic
	stModule
	stVersion
	stStatus
	stFixedOrCitation
	stFixedVersion
	stCitation
	stQuestion
	stTail
	stOwner
	stValue
)

// isDelim reports whether c ends a vocabulary item: SP, LF, or any other
// ASCII control character (a wrong separator).
func isDelim(c byte) bool { return c <= ' ' || c == 0x7f }

// record recognizes the record that starts at text[start]. It appends the
// record's spans to spans and returns them with the offset just past the
// record's LF. On a refusal it returns the spans accepted before it, the
// refusal, and the offset just past the next LF (or len(text)), where the
// caller may resume.
func (r *recognizer) record(text []byte, start int, spans []span) ([]span, int, *refusal) {
	end := len(text)
	limited := false
	if end-start > r.maxRecord+1 {
		end = start + r.maxRecord + 1
		limited = true
	}
	i := start
	st := stKeyword
	owners := 0
	r.valueIDs = r.valueIDs[:0]
	modID := -1 // the number of the record's module in the vocabulary
	var cat int8 = -1
	quote := 0

	fail := func(code receipts.Code, off, length, at int) ([]span, int, *refusal) {
		if length < 0 {
			length = 0
		}
		return spans, resync(text, at), &refusal{code: code, off: off, length: length}
	}
	// truncated handles reaching end in the middle of a record.
	truncated := func() ([]span, int, *refusal) {
		if limited {
			return fail(receipts.LimitExceeded, start, end-start, end)
		}
		return fail(receipts.MalformedRecord, start, end-start, end)
	}

	for {
		switch st {
		case stKeyword:
			rest := text[i:end]
			switch {
			case bytes.HasPrefix(rest, []byte("finding ")):
				spans = addSpan(addSpan(spans, spanKeyword, -1, 0, i, i+7), spanSep, -1, 0, i+7, i+8)
				i += 8
				st = stDiagnostic
			case bytes.HasPrefix(rest, []byte("ask ")):
				spans = addSpan(addSpan(spans, spanKeyword, -1, 0, i, i+3), spanSep, -1, 0, i+3, i+4)
				i += 4
				st = stQuestion
			case bareKeyword(rest, "finding"), bareKeyword(rest, "ask"):
				// A keyword with nothing after it: a missing field.
				n := bytes.IndexByte(rest, '\n')
				if n < 0 {
					n = len(rest)
				}
				return fail(receipts.MalformedRecord, i, n, i)
			default:
				n := bytes.IndexByte(rest, '\n')
				if n < 0 {
					n = len(rest)
				}
				return fail(receipts.UncoveredText, i, max(n, 1), i)
			}

		case stDiagnostic, stVersion, stStatus, stFixedVersion, stCitation, stQuestion, stModule:
			j := i
			for j < end && !isDelim(text[j]) && !(st == stModule && text[j] == '@') {
				j++
			}
			if j == end {
				return truncated()
			}
			c := text[j]
			if j == i {
				if st == stModule && c == '@' {
					return fail(receipts.UnknownModule, i, 0, i)
				}
				// An empty item: a doubled or trailing separator.
				return fail(receipts.UncoveredText, i, 1, i)
			}
			if st == stModule && c != '@' {
				if c != ' ' && c != '\n' {
					return fail(receipts.UncoveredText, j, 1, j)
				}
				return fail(receipts.MalformedRecord, i, j-i, j)
			}
			if c != ' ' && c != '\n' && c != '@' {
				return fail(receipts.UncoveredText, j, 1, j)
			}
			kind, id, code := r.lookup(st, text[i:j], modID)
			if code != "" {
				off, n := i, j-i
				if !utf8.Valid(text[i:j]) {
					code, off, n = receipts.InvalidUTF8, firstInvalidUTF8(text, i, j), 1
				}
				return fail(code, off, n, j)
			}
			spans = addSpan(spans, kind, -1, int32(id), i, j)
			switch st {
			case stCitation, stQuestion:
				i = j
				st = stTail
				continue
			case stModule:
				modID = id
				spans = addSpan(spans, spanAt, -1, 0, j, j+1)
				i = j + 1
				st = stVersion
				continue
			}
			if c != ' ' {
				// LF where another field must follow.
				return fail(receipts.MalformedRecord, j, 1, j)
			}
			spans = addSpan(spans, spanSep, -1, 0, j, j+1)
			i = j + 1
			switch st {
			case stDiagnostic:
				st = stModule
			case stVersion:
				st = stStatus
			case stStatus:
				st = stFixedOrCitation
			case stFixedVersion:
				st = stCitation
			}

		case stFixedOrCitation:
			if bytes.HasPrefix(text[i:end], []byte("fixed=")) {
				spans = addSpan(spans, spanFixed, -1, 0, i, i+6)
				i += 6
				st = stFixedVersion
			} else {
				st = stCitation
			}

		case stTail:
			if i == end {
				return truncated()
			}
			switch text[i] {
			case '\n':
				spans = addSpan(spans, spanSep, -1, 0, i, i+1)
				return spans, i + 1, nil
			case ' ':
				spans = addSpan(spans, spanSep, -1, 0, i, i+1)
				i++
				st = stOwner
			default:
				return fail(receipts.UncoveredText, i, 1, i)
			}

		case stOwner:
			rest := text[i:end]
			if !bytes.HasPrefix(rest, []byte("owner.")) {
				if len(rest) == 0 {
					return truncated()
				}
				n := 0
				for n < len(rest) && !isDelim(rest[n]) {
					n++
				}
				return fail(receipts.UncoveredText, i, max(n, 1), i)
			}
			j := i + 6
			for j < end && !isDelim(text[j]) && text[j] != '=' && text[j] != '"' {
				j++
			}
			if j == end {
				return truncated()
			}
			if text[j] != '=' {
				if isDelim(text[j]) && text[j] != ' ' && text[j] != '\n' {
					return fail(receipts.UncoveredText, j, 1, j)
				}
				return fail(receipts.MalformedRecord, i, j-i, j)
			}
			owners++
			if owners > r.maxOwners {
				return fail(receipts.LimitExceeded, i, j-i, j)
			}
			c := categoryIndex(text[i+6 : j])
			if c < 0 {
				return fail(receipts.UnknownCategory, i+6, j-i-6, j)
			}
			cat = int8(c)
			spans = addSpan(addSpan(spans, spanOwnerKey, cat, 0, i, j), spanEq, -1, 0, j, j+1)
			i = j + 1
			if i == end {
				return truncated()
			}
			if text[i] != '"' {
				return fail(receipts.MalformedRecord, i, 1, i)
			}
			spans = addSpan(spans, spanQuote, -1, 0, i, i+1)
			quote = i
			i++
			st = stValue

		case stValue:
			j := i
			for {
				if j == end {
					if limited {
						return fail(receipts.LimitExceeded, start, end-start, end)
					}
					return fail(receipts.MalformedRecord, quote, end-quote, end)
				}
				c := text[j]
				if c == '"' {
					break
				}
				if c == '\\' {
					if j+1 < end && (text[j+1] == '"' || text[j+1] == '\\') {
						j += 2
						continue
					}
					return fail(receipts.MalformedRecord, j, min(2, end-j), j)
				}
				if c < utf8.RuneSelf {
					if c < ' ' || c == 0x7f {
						if c == '\n' {
							return fail(receipts.MalformedRecord, quote, j-quote, j)
						}
						return fail(receipts.UncoveredText, j, 1, j)
					}
					j++
					continue
				}
				rn, size := utf8.DecodeRune(text[j:end])
				if rn == utf8.RuneError && size <= 1 {
					return fail(receipts.InvalidUTF8, j, 1, j)
				}
				if forbiddenRune(rn) {
					return fail(receipts.UncoveredText, j, size, j)
				}
				j += size
			}
			switch {
			case i == j:
				// Empty in a source or an export alike: no owner value and
				// no token is empty.
				return fail(receipts.AmbiguousSpan, quote, 2, j)
			case !r.tokens:
				if code := r.value(cat, text[i:j]); code != "" {
					return fail(code, i, j-i, j)
				}
			}
			spans = addSpan(addSpan(spans, spanValue, cat, 0, i, j), spanQuote, -1, 0, j, j+1)
			i = j + 1
			st = stTail
		}
	}
}

// addSpan appends one span to spans. It stores the fields in place: a
// span built whole and then copied is read back, as one word, from bytes
// just stored one by one, which stalls the CPU.
func addSpan(spans []span, kind spanKind, cat int8, id int32, start, end int) []span {
	n := len(spans)
	if n < cap(spans) {
		spans = spans[:n+1]
	} else {
		spans = append(spans, span{})
	}
	sp := &spans[n]
	sp.kind, sp.cat, sp.id, sp.start, sp.end = kind, cat, id, start, end
	return spans
}

// bareKeyword reports whether rest is kw alone: followed by LF or nothing.
func bareKeyword(rest []byte, kw string) bool {
	return bytes.HasPrefix(rest, []byte(kw)) && (len(rest) == len(kw) || rest[len(kw)] == '\n')
}

// resync returns the offset just past the first LF at or after at, or
// len(text).
func resync(text []byte, at int) int {
	if at >= len(text) {
		return len(text)
	}
	if k := bytes.IndexByte(text[at:], '\n'); k >= 0 {
		return at + k + 1
	}
	return len(text)
}

// lookup checks one vocabulary item read in state st. modID is the number
// of the record's module (for versions). It returns the span kind and the
// item's number in the vocabulary, or the refusal code when the item is not
// in the vocabulary.
func (r *recognizer) lookup(st state, item []byte, modID int) (spanKind, int, receipts.Code) {
	if st != stVersion && st != stFixedVersion {
		modID = -1 // only versions depend on the module
	}
	m := r.memo
	if m.item[st] != nil && m.mod[st] == modID && string(m.item[st]) == string(item) {
		return itemKinds[st], m.id[st], ""
	}
	var tag int
	switch st {
	case stDiagnostic:
		tag = tagDiagnostic
	case stModule:
		tag = tagModule
	case stVersion, stFixedVersion:
		if modID < 0 {
			return 0, -1, receipts.UnknownVersion
		}
		tag = tagVersions + modID
	case stStatus:
		tag = tagStatus
	case stCitation:
		tag = tagCitation
	case stQuestion:
		tag = tagQuestion
	default:
		return 0, -1, receipts.UncoveredText
	}
	id, _ := r.voc.items.find(tag, item, r.voc.items.hash(item))
	if id < 0 {
		return 0, -1, notFound[st]
	}
	m.item[st], m.mod[st], m.id[st] = item, modID, id
	return itemKinds[st], id, ""
}

// itemKinds is the span kind of an item found in each state that reads one,
// and notFound the refusal of an item that is not in the vocabulary.
var (
	itemKinds = [stValue + 1]spanKind{
		stDiagnostic: spanDiagnostic, stModule: spanModule, stVersion: spanVersion, stStatus: spanStatus,
		stFixedVersion: spanFixedVersion, stCitation: spanCitation, stQuestion: spanQuestion,
	}
	notFound = [stValue + 1]receipts.Code{
		stDiagnostic: receipts.UnknownDiagnostic, stModule: receipts.UnknownModule, stVersion: receipts.UnknownVersion,
		stStatus: receipts.UnknownStatus, stFixedVersion: receipts.UnknownVersion, stCitation: receipts.UnknownCitation,
		stQuestion: receipts.UnknownQuestion,
	}
)

// value applies the ambiguity rules to the owner value raw of category cat
// and, with a value table, numbers it.
func (r *recognizer) value(cat int8, raw []byte) receipts.Code {
	if r.values == nil {
		return r.ambiguous(raw)
	}
	id, slot, h := r.values.findValue(int(cat), raw)
	if id < 0 {
		if code := r.ambiguous(raw); code != "" {
			return code
		}
		id = r.values.addValue(int(cat), raw, h, slot)
	}
	r.valueIDs = append(r.valueIDs, id)
	return ""
}

// ambiguous applies the ambiguity rules to an owner value as written (its
// characters already checked): empty, padded with white space, not NFC, or
// equal to a vocabulary item.
func (r *recognizer) ambiguous(raw []byte) receipts.Code {
	if len(raw) == 0 {
		return receipts.AmbiguousSpan
	}
	v := raw
	if bytes.IndexByte(raw, '\\') >= 0 {
		r.scratch = unescapeValue(r.scratch[:0], raw)
		v = r.scratch
	}
	first, _ := utf8.DecodeRune(v)
	last, _ := utf8.DecodeLastRune(v)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return receipts.AmbiguousSpan
	}
	if !isASCII(v) && !norm.NFC.IsNormal(v) {
		return receipts.AmbiguousSpan
	}
	if r.voc.all.has(0, v) {
		return receipts.AmbiguousSpan
	}
	// In the source, a value that begins as a token does would read as a
	// token in the export, and its own token may equal it. (The export's
	// owner quotes hold tokens.)
	if !r.tokens && (bytes.HasPrefix(v, []byte("redacted:")) || bytes.HasPrefix(v, []byte("pcv:"))) {
		return receipts.AmbiguousSpan
	}
	return ""
}

// unescapeValue appends to dst the value written as raw, resolving \" and \\.
func unescapeValue(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		dst = append(dst, raw[i])
	}
	return dst
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// firstInvalidUTF8 returns the offset of the first invalid UTF-8 byte in
// text[i:j], or i.
func firstInvalidUTF8(text []byte, i, j int) int {
	for k := i; k < j; {
		r, size := utf8.DecodeRune(text[k:j])
		if r == utf8.RuneError && size <= 1 {
			return k
		}
		k += size
	}
	return i
}

// forbiddenRune reports whether r may not appear in an owner value: C0 and C1
// controls, DEL, bidi controls, zero-width and invisible characters, and
// noncharacters. The quote and backslash are handled by the machine.
func forbiddenRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidi controls
	case r == 0x00ad, r == 0x180e, r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return true // zero-width and invisible
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
		return true // noncharacters
	case r >= 0xd800 && r <= 0xdfff, r > utf8.MaxRune:
		return true
	}
	return false
}
