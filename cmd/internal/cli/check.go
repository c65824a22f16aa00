package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

func init() {
	register(&command{name: "check", synopsis: "--vocab V [--json] [--show-text] [--max-parents N] PROJ",
		summary: "check that a projection is covered by closed-diagnostic@1: coverage and refusals only", run: runCheck})
}

// checkOK is the --json output of an accepted check (docs/FORMATS.md#cli-check).
type checkOK struct {
	OK          bool           `json:"ok"`
	Parts       int            `json:"parts"`
	Records     int            `json:"records"`
	PublicItems int            `json:"public_items"`
	OwnerSpans  map[string]int `json:"owner_spans"`
}

func runCheck(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("check")
	vocabPath := fs.String("vocab", "", "vocabulary `file` (Vocabulary@1)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	showText := fs.Bool("show-text", false, "also print the refused text (local terminal only; not with --json)")
	maxParents := fs.Int("max-parents", grammar.DefaultMaxParents, "distinct parents allowed in the joined label")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *vocabPath == "" || len(pos) != 1 {
		return c.usage()
	}
	if *maxParents < 1 {
		return usagef("--max-parents must be positive")
	}
	if *asJSON && *showText {
		return usagef("--show-text prints input and is for the local terminal only; it cannot be combined with --json")
	}
	vocab, err := loadVocabulary(*vocabPath)
	if err != nil {
		return err
	}
	data, refs, err := readProjection(c, pos[0])
	if err != nil {
		return err
	}
	var res grammar.Result
	var doc *grammar.Document
	if refs == nil {
		doc, refs = grammar.LoadProjection(data, grammar.LoadOptions{Buffer: c.buffer})
	}
	if refs == nil {
		res = grammar.Check(doc, grammar.NewParser(vocab, grammar.Options{}), *maxParents, nil)
		refs = res.Refusals
	}
	if len(refs) > 0 {
		return c.refuse(*asJSON, refs, func(r receipts.Refusal) string {
			if !*showText {
				return ""
			}
			return offending(data, doc, r)
		})
	}
	out := checkOK{OK: true, Parts: res.Parts, Records: res.Stats.Records,
		PublicItems: res.Stats.PublicItems, OwnerSpans: res.Stats.OwnerSpans()}
	if *asJSON {
		return c.printJSON(out)
	}
	total := 0
	for _, n := range out.OwnerSpans {
		total += n
	}
	fmt.Fprintf(c.Stdout, "ok: %d parts, %d records, %d public items, %d owner spans\n",
		out.Parts, out.Records, out.PublicItems, total)
	fmt.Fprintf(c.Stdout, "owner spans: %s\n", summary(out.OwnerSpans))
	return nil
}

// summary formats per-category counts as "module 3, team 1" (or "none").
func summary(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// offending returns the refused bytes, for --show-text only.
func offending(data []byte, doc *grammar.Document, r receipts.Refusal) string {
	var src []byte
	switch {
	case r.Part < 0:
		src = data
	case r.Line == 0 || doc == nil || r.Part >= len(doc.Parts):
		return ""
	default:
		src = doc.Parts[r.Part].Text
	}
	if r.Offset < 0 || r.Offset > len(src) {
		return ""
	}
	end := min(r.Offset+r.Length, len(src))
	return fmt.Sprintf("%q", src[r.Offset:end])
}

// refuse journals and prints a refusal of the command's own (check's, or an
// input refused before a pipeline saw it) and returns the error that makes
// cut exit 3. text, when it returns non-empty, adds the refused text to a
// human line (check --show-text).
func (c *Cmd) refuse(asJSON bool, refs []receipts.Refusal, text func(receipts.Refusal) string) error {
	doc := receipts.RefusalDocument{Refused: true, EventID: receipts.NewEventID()}
	for _, r := range refs {
		doc.Reasons = append(doc.Reasons, receipts.Refusal{Code: r.Code, Part: r.Part, Kind: r.Kind,
			Line: r.Line, Column: r.Column, Length: r.Length, Path: r.Path})
	}
	c.journal(doc.EventID, doc.Reasons)
	if asJSON || text == nil {
		return c.printRefusal(asJSON, doc)
	}
	noun := "reasons"
	if len(refs) == 1 {
		noun = "reason"
	}
	fmt.Fprintf(c.Stdout, "refused: %d %s (event %s)\n", len(refs), noun, doc.EventID)
	for _, r := range refs {
		line := refusalLine(r)
		if t := text(r); t != "" {
			line += ": " + t
		}
		fmt.Fprintln(c.Stdout, line)
	}
	return &refusedError{len(refs)}
}

// printJSON prints v in canonical JSON followed by a newline.
func (c *Cmd) printJSON(v any) error {
	b, err := canon.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.Stdout.Write(append(b, '\n'))
	return err
}
