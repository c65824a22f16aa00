package cli

import (
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

// openJournal returns the evidence journal, or nil (with a warning) when no
// path can be found.
func (c *Cmd) openJournal() *egress.Journal {
	p, err := egress.DefaultJournalPath(c.Getenv)
	if err != nil {
		c.hintf("no evidence journal: %v", err)
		return nil
	}
	return egress.OpenJournal(p)
}

// journal records a refusal. A journal that cannot be written is reported
// on stderr; the refusal itself still stands.
func (c *Cmd) journal(eventID string, reasons []receipts.Refusal) {
	j := c.openJournal()
	if j == nil {
		return
	}
	codes := make([]receipts.Code, 0, len(reasons))
	for _, r := range reasons {
		codes = append(codes, r.Code)
	}
	if err := j.Append(egress.Entry{EventID: eventID, Kind: "refusal", Command: c.canonical(), Codes: codes, Reasons: reasons}); err != nil {
		c.errorf("evidence journal: %v", err)
	}
}
