package pipeline

import (
	"errors"
	"strings"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

// RefusedError is a refusal by policy: of the projection, the plan, the
// vault, the egress gate or a rehydration. Its document has been journaled
// under its event id. It carries codes, positions and field names only.
type RefusedError struct {
	Document receipts.RefusalDocument
	// Field is the plan field that did not hold, for a plan refusal.
	Field string
	// Detail is a fixed, content-free explanation (the vault profile's
	// unproven items, an egress reason word), or "".
	Detail string
	// Err is the error behind the refusal, when there is one (a vault
	// error, an *egress.Error); its text is content-free too.
	Err error
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("refused")
	for i, r := range e.Document.Reasons {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(r.Error())
	}
	if e.Field != "" {
		b.WriteString(" (plan field " + e.Field + ")")
	}
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	return b.String()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Codes returns the refusal's codes, in order.
func (e *RefusedError) Codes() []receipts.Code {
	out := make([]receipts.Code, len(e.Document.Reasons))
	for i, r := range e.Document.Reasons {
		out[i] = r.Code
	}
	return out
}

// VerificationError is a cut the verifier did not pass. The cut was not
// sealed; Prepare returns it with this error.
type VerificationError struct {
	Verification receipts.Verification
}

func (e *VerificationError) Error() string {
	return "verification failed: " + strings.Join(e.Verification.Failed(), ", ")
}

// refuse journals refs as one refusal document (command names the step
// in the journal) and returns it as a *RefusedError.
func (p *Pipeline) refuse(refs []receipts.Refusal, field, detail string, cause error) *RefusedError {
	doc := receipts.RefusalDocument{Refused: true, EventID: receipts.NewEventID()}
	for _, r := range refs {
		// Only the printed members: an offset or a reason stays out of
		// the document (the reason is in Error).
		doc.Reasons = append(doc.Reasons, receipts.Refusal{Code: r.Code, Part: r.Part, Kind: r.Kind,
			Line: r.Line, Column: r.Column, Length: r.Length, Path: r.Path})
	}
	p.journalRefusal(doc)
	return &RefusedError{Document: doc, Field: field, Detail: detail, Err: cause}
}

// Refuse makes a refusal of the caller's own (an input refused before it
// reached the pipeline, such as a file over its size limit) into a
// *RefusedError, journaled as the pipeline's are.
func (p *Pipeline) Refuse(refs []receipts.Refusal) *RefusedError {
	return p.refuse(refs, "", "", nil)
}

func (p *Pipeline) journalRefusal(doc receipts.RefusalDocument) {
	if err := p.appendRefusal(doc); err != nil && p.opt.Warn != nil {
		p.opt.Warn("evidence journal: " + err.Error())
	}
}

func (p *Pipeline) appendRefusal(doc receipts.RefusalDocument) error {
	if p.opt.Journal == nil {
		return nil
	}
	codes := make([]receipts.Code, 0, len(doc.Reasons))
	for _, r := range doc.Reasons {
		codes = append(codes, r.Code)
	}
	return p.opt.Journal.Append(egress.Entry{EventID: doc.EventID, Kind: "refusal", Command: p.command(),
		Codes: codes, Reasons: doc.Reasons})
}

// wireRefusal makes a *wire.Error a plan refusal naming its field; any
// other error is returned as it is.
func (p *Pipeline) wireRefusal(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return p.refuse(planRefusal(we.Code), we.Field, we.Reason, err)
	}
	return err
}

// planRefusal is a refusal about the plan (part -1, kind "plan").
func planRefusal(code receipts.Code) []receipts.Refusal {
	return []receipts.Refusal{{Code: code, Part: -1, Kind: "plan"}}
}
