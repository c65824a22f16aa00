package grammar

// SpanKind says what a span of accepted text is.
type SpanKind uint8

// The three kinds of span. Every byte of an accepted text belongs to exactly
// one span.
const (
	SpanLiteral SpanKind = iota + 1 // a fixed string of the grammar
	SpanPublic                      // a vocabulary item
	SpanOwner                       // an owner value, escaped as written, without its quotes
)

func (k SpanKind) String() string {
	switch k {
	case SpanLiteral:
		return "literal"
	case SpanPublic:
		return "public"
	case SpanOwner:
		return "owner"
	}
	return "invalid"
}

// Literal names a fixed string of the grammar.
type Literal uint8

// The grammar literals. LiteralOwner stands for ` owner.<category>="`, with the
// category in the span.
const (
	LiteralNone    Literal = iota
	LiteralFinding         // "finding "
	LiteralAsk             // "ask "
	LiteralSP              // " "
	LiteralAt              // "@"
	LiteralFixed           // " fixed="
	LiteralOwner           // ` owner.<category>="`
	LiteralQuote           // `"`
	LiteralLF              // "\n"
)

// Span is one piece of an accepted text. Off and Len are byte offsets into the
// text the parser was given.
type Span struct {
	Off, Len int
	Kind     SpanKind
	Literal  Literal  // for SpanLiteral
	Class    Class    // for SpanPublic
	Item     int32    // for SpanPublic: the item's index in its vocabulary table
	Category Category // for SpanOwner, and for LiteralOwner
}

// Stats counts what a parse accepted.
type Stats struct {
	Records     int // finding and ask records
	Findings    int // finding records
	PublicItems int
	Owners      [numCategories]int
}

// Add accumulates o into s.
func (s *Stats) Add(o Stats) {
	s.Records += o.Records
	s.Findings += o.Findings
	s.PublicItems += o.PublicItems
	for i := range s.Owners {
		s.Owners[i] += o.Owners[i]
	}
}

// OwnerSpans returns the owner-span counts by category name, omitting zeros.
func (s Stats) OwnerSpans() map[string]int {
	m := map[string]int{}
	for c := CategoryModule; c < numCategories; c++ {
		if n := s.Owners[c]; n > 0 {
			m[c.String()] = n
		}
	}
	return m
}

// literalText returns the bytes of a literal span; for LiteralOwner the
// category is needed.
func literalText(l Literal, c Category) string {
	switch l {
	case LiteralFinding:
		return "finding "
	case LiteralAsk:
		return "ask "
	case LiteralSP:
		return " "
	case LiteralAt:
		return "@"
	case LiteralFixed:
		return " fixed="
	case LiteralOwner:
		return " owner." + c.String() + `="`
	case LiteralQuote:
		return `"`
	case LiteralLF:
		return "\n"
	}
	return ""
}

// Render rebuilds text from its spans without copying literal or public bytes
// from it: literals come from the grammar, public items from the vocabulary,
// and owner values are decoded and re-escaped. For accepted text, Render
// returns text exactly; it is the round-trip check of the parser.
func Render(v *Vocabulary, text []byte, spans []Span) []byte {
	out := make([]byte, 0, len(text))
	for _, s := range spans {
		switch s.Kind {
		case SpanLiteral:
			out = append(out, literalText(s.Literal, s.Category)...)
		case SpanPublic:
			out = append(out, v.Item(s.Class, s.Item)...)
		case SpanOwner:
			out = Escape(out, Unescape(text[s.Off:s.Off+s.Len]))
		}
	}
	return out
}
