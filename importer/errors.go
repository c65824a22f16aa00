package importer

import (
	"fmt"
	"strings"

	"github.com/privacycut/privacycut/receipts"
)

// Class is what a finding lacks when the importer refuses or drops it: a
// public item the vocabulary does not hold, or a dependency the input does
// not give.
type Class uint8

// The classes. ClassNone is the zero value and names no class.
const (
	ClassNone       Class = iota
	ClassDiagnostic       // the vulnerability id
	ClassModule           // the vulnerable module
	ClassVersion          // the vulnerable module's version
	ClassFixed            // the fixed version
	ClassStatus           // the status word
	ClassCitation         // no reference of the entry is a vocabulary citation
	ClassDependency       // the input names no Go module@version for the finding
	numClasses
)

var classNames = [numClasses]string{"", "diagnostic", "module", "version", "fixed", "status", "citation", "dependency"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "invalid"
}

// Code is the refusal code of a finding refused for c.
func (c Class) Code() receipts.Code {
	switch c {
	case ClassDiagnostic:
		return receipts.UnknownDiagnostic
	case ClassModule:
		return receipts.UnknownModule
	case ClassVersion, ClassFixed:
		return receipts.UnknownVersion
	case ClassStatus:
		return receipts.UnknownStatus
	case ClassCitation:
		return receipts.UnknownCitation
	}
	return receipts.MalformedRecord
}

// Counts counts findings by class. A finding lacking two classes counts in
// both.
type Counts [numClasses]int

// Total is the sum over all classes.
func (c Counts) Total() int {
	n := 0
	for _, k := range c {
		n += k
	}
	return n
}

// String lists the non-zero counts in class order: "module 1, citation 2",
// or "none".
func (c Counts) String() string {
	var parts []string
	for k := ClassDiagnostic; k < numClasses; k++ {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// RefusedError refuses the whole import. It names the finding (1-based, in
// input order) and what was wrong with it, never a value: Class is a Class
// name ("module"), "owner.<category>" for an owner value the grammar
// refuses, "record" for a record the grammar refuses as a whole (its
// length, its number of owner slots) or "question" for an --ask question.
type RefusedError struct {
	Code    receipts.Code
	Finding int // 0 for a question
	Class   string
	// Fault, for an owner value, says why the grammar refuses it: a
	// character class and code point ("U+0009 TAB (a control character)")
	// or a property of the value ("padded with white space"); fixed text,
	// never the value. Offset is the character's byte offset in the value,
	// -1 for a property of the whole value.
	Fault  string
	Offset int
	// Unknown counts the findings of the whole input that lack a public
	// item, by class (filled when the refusal is about one).
	Unknown Counts
}

func (e *RefusedError) Error() string {
	what := e.Class + " not in the vocabulary"
	switch {
	case e.Class == ClassDependency.String():
		what = "no Go module@version dependency"
	case strings.HasPrefix(e.Class, "owner.") && e.Fault != "" && e.Offset >= 0:
		what = fmt.Sprintf("%s at byte %d of %s", e.Fault, e.Offset, e.Class)
	case strings.HasPrefix(e.Class, "owner.") && e.Fault != "":
		what = e.Class + " is " + e.Fault
	case strings.HasPrefix(e.Class, "owner.") || e.Class == "record":
		what = e.Class + " refused by the grammar"
	}
	if e.Finding == 0 {
		return fmt.Sprintf("importer: %s (%s)", what, e.Code)
	}
	return fmt.Sprintf("importer: finding %d: %s (%s)", e.Finding, what, e.Code)
}

// InputError is an input the importer cannot read: not the documented
// format, malformed, or over a limit. It locates the problem and never holds
// input bytes: Path is built from the format's field names and indices, and
// Reason is fixed text.
type InputError struct {
	Code    receipts.Code // MalformedRecord, InvalidUTF8 or LimitExceeded
	Format  string        // "govulncheck", "openvex", "osv-scanner"
	Message int           // govulncheck: the 1-based message number; else 0
	Line    int           // 1-based; 0 when unknown
	Column  int           // 1-based byte column
	Offset  int           // byte offset in the input
	Path    string        // e.g. "finding.trace[1].module", or ""
	Reason  string
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("importer: ")
	b.WriteString(e.Format)
	b.WriteString(": ")
	if e.Message > 0 {
		fmt.Fprintf(&b, "message %d ", e.Message)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d col %d: ", e.Line, e.Column)
	} else {
		fmt.Fprintf(&b, "offset %d: ", e.Offset)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	b.WriteString(" (")
	b.WriteString(string(e.Code))
	b.WriteString(")")
	return b.String()
}

// CodeOwnersError is a CODEOWNERS file the importer cannot use. It names the
// line, never its text (CODEOWNERS names people).
type CodeOwnersError struct {
	Line   int // 1-based; 0 for the whole file
	Reason string
}

func (e *CodeOwnersError) Error() string {
	if e.Line == 0 {
		return "importer: codeowners: " + e.Reason
	}
	return fmt.Sprintf("importer: codeowners: line %d: %s", e.Line, e.Reason)
}

// Code is MALFORMED_RECORD, or LIMIT_EXCEEDED for a file over the limit.
func (e *CodeOwnersError) Code() receipts.Code {
	if strings.HasPrefix(e.Reason, "larger than") {
		return receipts.LimitExceeded
	}
	return receipts.MalformedRecord
}
