package service

import (
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// The export reader of Bind. The vault does not parse closed-diagnostic@1
// (it imports neither the grammar nor the censor): it reads an Export@1
// document's texts only as far as their owner quotes go. A text is lines,
// each ended by LF; a line is fields separated by single spaces; a field
// that starts with "owner." is an owner slot, owner.<category>="<value>",
// whose value runs to the first quote not escaped by a backslash (the only
// escapes are \" and \\). Every other field is public text, which holds
// no quote and no backslash (no vocabulary item does): a quote outside an
// owner slot could otherwise move where the reader thinks a slot begins.
// Nothing else of the grammar is checked here; the verifier checks the
// rest.

// exportProfile is the one profile an export may name.
const exportProfile = "closed-diagnostic@1"

// maxExportBytes bounds the export Bind reads (the gRPC message limit
// bounds it first).
const maxExportBytes = 256 << 20

// The fixed reasons of Bind's refusals of an export (MALFORMED_RECORD for
// what the reader cannot read, PLAN_MISMATCH for tokens that are not this
// lease's issuance). They name the fault, never the text.
const (
	reasonExportDocument  = "export is not an Export@1 document"
	reasonExportProfile   = "export profile is not closed-diagnostic@1"
	reasonTextLF          = "text does not end with a line feed"
	reasonOwnerSyntax     = "owner field is not owner.<category>=\"<value>\""
	reasonOwnerUnclosed   = "owner value not closed on its line"
	reasonOwnerEscape     = "escape other than \\\" or \\\\ in an owner value"
	reasonOwnerCategory   = "owner category unknown"
	reasonQuoteOutside    = "quote or backslash outside an owner value"
	reasonNotToken        = "owner value is not a vault token"
	reasonOtherNamespace  = "token of another namespace"
	reasonNotIssued       = "token not issued by this lease"
	reasonWrongCategory   = "token in an owner slot of another category"
	reasonOrder           = "first appearances of the tokens not in issuance order"
	reasonMissing         = "an issued token does not occur in the export"
	exportRefusalKind     = "export"
	exportRefusalField    = "export"
	exportRefusalOp       = "bind"
	exportPartWholeExport = -1
)

// exportDoc is an Export@1 document as the reader decodes it.
type exportDoc struct {
	Parts []struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	} `json:"parts"`
	Profile string `json:"profile"`
}

// slot is one owner slot of an export: where its value sits in its part's
// decoded text (line and column 1-based, the column and length in bytes,
// off the byte offset) and its category and raw value, still escaped (a
// token has no escapes).
type slot struct {
	part              int
	line, col, length int
	off               int
	category          string
	value             string
}

// exportRefusal is Bind's refusal of an export: an *Error with code and
// field "export" wrapping the positioned *receipts.Refusal (kind "export",
// part index, line, column and length in the part's text, a fixed reason).
func exportRefusal(code receipts.Code, part, line, col, length int, reason string) error {
	return vaultapi.New(code, exportRefusalOp, exportRefusalField, &receipts.Refusal{
		Code: code, Part: part, Kind: exportRefusalKind, Line: line, Column: col, Length: length, Reason: reason,
	})
}

// readExport decodes an export strictly and calls fn with every owner slot
// of its texts in order (part, then line, then column). A document it
// cannot read is MALFORMED_RECORD, positioned where it could tell.
func readExport(export []byte, fn func(slot) error) error {
	var doc exportDoc
	if err := canon.Unmarshal(export, &doc, canon.Options{MaxBytes: maxExportBytes}); err != nil {
		return exportRefusal(receipts.MalformedRecord, exportPartWholeExport, 0, 0, 0, reasonExportDocument)
	}
	if doc.Profile != exportProfile {
		return exportRefusal(receipts.MalformedRecord, exportPartWholeExport, 0, 0, 0, reasonExportProfile)
	}
	for i, p := range doc.Parts {
		if err := readText(i, p.Text, fn); err != nil {
			return err
		}
	}
	return nil
}

// readText reads one part's text.
func readText(part int, text string, fn func(slot) error) error {
	bad := func(line, col, n int, reason string) error {
		return exportRefusal(receipts.MalformedRecord, part, line, col, n, reason)
	}
	if text != "" && text[len(text)-1] != '\n' {
		lines := strings.Count(text, "\n")
		last := strings.LastIndexByte(text, '\n') + 1
		return bad(lines+1, 1, len(text)-last, reasonTextLF)
	}
	start := 0
	for line := 1; start < len(text); line++ {
		end := start + strings.IndexByte(text[start:], '\n')
		if err := readLine(part, line, start, text[start:end], fn); err != nil {
			return err
		}
		start = end + 1
	}
	return nil
}

// readLine reads the fields of one line (without its LF) that starts at
// byte base of the part's text.
func readLine(part, line, base int, s string, fn func(slot) error) error {
	bad := func(at, n int, reason string) error {
		return exportRefusal(receipts.MalformedRecord, part, line, at+1, n, reason)
	}
	i := 0
	for {
		// The public fields up to the next owner slot (a field that starts
		// with "owner."), or to the end of the line, hold no quote and no
		// backslash.
		o := slotStart(s, i)
		if q := quoteAt(s[i:o]); q >= 0 {
			return bad(i+q, 1, reasonQuoteOutside)
		}
		if o == len(s) {
			return nil
		}
		// owner.<category>="<value>"
		c := o + len("owner.")
		j := c
		for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		if j == c || j+1 >= len(s) || s[j] != '=' || s[j+1] != '"' {
			return bad(o, j-o, reasonOwnerSyntax)
		}
		cat := s[c:j]
		if _, code := categoryIndex(cat); code != "" {
			return bad(c, j-c, reasonOwnerCategory)
		}
		v := j + 2
		k := v
		for {
			q := quoteAt(s[k:])
			if q < 0 {
				return bad(v, len(s)-v, reasonOwnerUnclosed)
			}
			if k += q; s[k] == '"' {
				break
			}
			if k+1 >= len(s) || s[k+1] != '"' && s[k+1] != '\\' {
				return bad(k, min(2, len(s)-k), reasonOwnerEscape)
			}
			k += 2
		}
		if err := fn(slot{part: part, line: line, col: v + 1, length: k - v, off: base + v, category: cat, value: s[v:k]}); err != nil {
			return err
		}
		switch {
		case k+1 == len(s):
			return nil
		case s[k+1] != ' ':
			return bad(k+1, 1, reasonOwnerSyntax)
		}
		i = k + 2
	}
}

// slotStart returns the offset of the first field at or after i that
// starts with "owner." (a field starts at i, at 0, or after a space), or
// len(s) when there is none.
func slotStart(s string, i int) int {
	for i < len(s) {
		k := strings.Index(s[i:], "owner.")
		if k < 0 {
			return len(s)
		}
		k += i
		if k == i || s[k-1] == ' ' {
			return k
		}
		i = k + 1
	}
	return len(s)
}

// quoteAt returns the offset of the first quote or backslash in s, or -1.
func quoteAt(s string) int {
	q, b := strings.IndexByte(s, '"'), strings.IndexByte(s, '\\')
	switch {
	case q < 0:
		return b
	case b < 0:
		return q
	}
	return min(q, b)
}

// checkExport checks an export against the lease's issuance: issued holds
// every token the lease issued, in issuance order (the order of first
// appearance of their values in the cut, which the censor follows when it
// asks for them), in namespace ns. Every owner slot must hold one of those
// tokens, of the slot's category; the distinct tokens' first appearances
// must come in issuance order; and every issued token must appear. A
// failure is PLAN_MISMATCH, positioned at the slot (or, for a token that
// never appears, at the whole export).
func checkExport(export []byte, ns string, issued []string) error {
	index := make(map[string]int, len(issued))
	for i, t := range issued {
		index[t] = i
	}
	seen := make([]bool, len(issued))
	next := 0
	err := readExport(export, func(s slot) error {
		mismatch := func(reason string) error {
			return exportRefusal(receipts.PlanMismatch, s.part, s.line, s.col, s.length, reason)
		}
		rest, ok := strings.CutPrefix(s.value, tokenPrefix)
		if !ok {
			return mismatch(reasonNotToken)
		}
		tns, rest, ok := strings.Cut(rest, ":")
		if !ok {
			return mismatch(reasonNotIssued)
		}
		if tns != ns {
			if len(tns) == 10 && validMAC20(rest) {
				return mismatch(reasonOtherNamespace)
			}
			return mismatch(reasonNotIssued)
		}
		i, ok := index[s.value]
		if !ok {
			return mismatch(reasonNotIssued)
		}
		if tcat, _, _ := strings.Cut(rest, ":"); tcat != s.category {
			return mismatch(reasonWrongCategory)
		}
		if seen[i] {
			return nil
		}
		if i != next {
			return mismatch(reasonOrder)
		}
		seen[i] = true
		next++
		return nil
	})
	if err != nil {
		return err
	}
	if next != len(issued) {
		return exportRefusal(receipts.PlanMismatch, exportPartWholeExport, 0, 0, 0, reasonMissing)
	}
	return nil
}

// validMAC20 reports whether s is "<category>:<20 base32 chars>": the rest
// of a token after its namespace, to tell another namespace's token from
// an invented string.
func validMAC20(s string) bool {
	cat, mac, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	if _, code := categoryIndex(cat); code != "" {
		return false
	}
	return validMAC([]byte(mac))
}
