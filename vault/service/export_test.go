package service

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

var update = flag.Bool("update", false, "rewrite the bind vectors in testdata/bind")

// The bind vectors: one export per file, checked against a fixed issuance
// (namespace and issued tokens in order) with the outcome checkExport must
// give. They are made from the format alone (makeBindVectors writes JSON
// and closed-diagnostic@1 text by hand) and kept on disk; -update rewrites
// them.
//
//	# comment
//	expect: ok | MALFORMED_RECORD | PLAN_MISMATCH
//	at: <part> <line> <column> <length>     (refusals only)
//	reason: <the fixed reason>               (refusals only)
//	namespace: <the lease's namespace>
//	issued: <token>,<token>,…                (issuance order)
//
//	<the export document>
type bindVector struct {
	name, comment, expect string
	at                    [4]int
	reason                string
	namespace             string
	issued                []string
	export                []byte
}

const bindVectorDir = "testdata/bind"

// The issuance of the vectors: three values a (module), b (team), c
// (module), first appearing in that order.
var (
	vecNS  = "abcdefghij"
	vecT0  = "pcv:abcdefghij:module:aaaaaaaaaaaaaaaaaaaa"
	vecT1  = "pcv:abcdefghij:team:bbbbbbbbbbbbbbbbbbbb"
	vecT2  = "pcv:abcdefghij:module:cccccccccccccccccccc"
	vecIss = []string{vecT0, vecT1, vecT2}
)

// vecExport writes an Export@1 document of one block part with the text
// given (JSON-escaped by hand: the texts hold only ASCII, quotes,
// backslashes and LFs), or of the texts given as parts.
func vecExport(texts ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"parts":[`)
	for i, t := range texts {
		if i > 0 {
			b.WriteString(",")
		}
		t = strings.ReplaceAll(t, `\`, `\\`)
		t = strings.ReplaceAll(t, `"`, `\"`)
		t = strings.ReplaceAll(t, "\n", `\n`)
		b.WriteString(`{"kind":"block","text":"` + t + `"}`)
	}
	b.WriteString(`],"profile":"closed-diagnostic@1"}`)
	return []byte(b.String())
}

// vecText is the cut's text with the tokens of the three slots of value a
// (twice), b and c put in: line 1 holds a then b, line 2 c then a again.
func vecText(a1, b, c, a2 string) string {
	return `finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="` + a1 + `" owner.team="` + b + "\"\n" +
		`ask triage.rank-by-severity owner.module="` + c + `" owner.module="` + a2 + "\"\n"
}

// line1Slot1 and friends are the columns of the slots of vecText.
var (
	slot1Col = len(`finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="`) + 1
	slot2Col = func(a1 string) int {
		return len(`finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="`+a1+`" owner.team="`) + 1
	}
	slot3Col = len(`ask triage.rank-by-severity owner.module="`) + 1
)

func makeBindVectors() []bindVector {
	ok := func(name, comment string, export []byte) bindVector {
		return bindVector{name: name, comment: comment, expect: "ok", namespace: vecNS, issued: vecIss, export: export}
	}
	refused := func(name, comment string, code receipts.Code, at [4]int, reason string, export []byte) bindVector {
		return bindVector{name: name, comment: comment, expect: string(code), at: at, reason: reason,
			namespace: vecNS, issued: vecIss, export: export}
	}
	pm, mr := receipts.PlanMismatch, receipts.MalformedRecord
	tl := len(vecT0)
	invented := "pcv:abcdefghij:module:zzzzzzzzzzzzzzzzzzzz"
	altered := vecT1[:len(vecT1)-1] + "c"
	other := "pcv:qqqqqqqqqq:module:aaaaaaaaaaaaaaaaaaaa"
	raw := "git.corp.example/payments/ledger"
	return []bindVector{
		ok("ok", "the censor's export: every slot holds its value's token, first appearances in issuance order",
			vecExport(vecText(vecT0, vecT1, vecT2, vecT0))),
		ok("ok-two-parts", "the same slots over two parts",
			vecExport(`finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="`+vecT0+`" owner.team="`+vecT1+"\"\n",
				`ask triage.rank-by-severity owner.module="`+vecT2+`" owner.module="`+vecT0+"\"\n")),
		ok("partial-swap-undetected", "a's second slot given c's token: first appearances unchanged, so bind cannot tell; the verifier's token-consistency claim must",
			vecExport(vecText(vecT0, vecT1, vecT2, vecT2))),
		refused("swap", "the tokens of a and c swapped everywhere: c's token now first appears before b's and a's", pm,
			[4]int{0, 1, slot1Col, tl}, reasonOrder, vecExport(vecText(vecT2, vecT1, vecT0, vecT2))),
		refused("swap-across-categories", "the tokens of a (module) and b (team) swapped: each sits in a slot of the other category", pm,
			[4]int{0, 1, slot1Col, len(vecT1)}, reasonWrongCategory, vecExport(vecText(vecT1, vecT0, vecT2, vecT1))),
		refused("invented", "a token of the lease's shape and namespace that it never issued", pm,
			[4]int{0, 1, slot1Col, tl}, reasonNotIssued, vecExport(vecText(invented, vecT1, vecT2, invented))),
		refused("altered-mac", "b's token with the last character of its mac altered", pm,
			[4]int{0, 1, slot2Col(vecT0), len(altered)}, reasonNotIssued, vecExport(vecText(vecT0, altered, vecT2, vecT0))),
		refused("other-namespace", "a's mac under another lease's namespace", pm,
			[4]int{0, 1, slot1Col, len(other)}, reasonOtherNamespace, vecExport(vecText(other, vecT1, vecT2, vecT0))),
		refused("wrong-category-slot", "a module token in a team slot", pm,
			[4]int{0, 1, slot2Col(vecT0), tl}, reasonWrongCategory, vecExport(vecText(vecT0, vecT2, vecT2, vecT0))),
		refused("raw-value", "an owner value left in clear", pm,
			[4]int{0, 2, slot3Col, len(raw)}, reasonNotToken, vecExport(vecText(vecT0, vecT1, raw, vecT0))),
		refused("irreversible-token", "an irreversible token in a reversible export", pm,
			[4]int{0, 2, slot3Col, len("redacted:module:2")}, reasonNotToken, vecExport(vecText(vecT0, vecT1, "redacted:module:2", vecT0))),
		refused("missing", "c's slot dropped: an issued token never appears", pm,
			[4]int{-1, 0, 0, 0}, reasonMissing,
			vecExport(`finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="`+vecT0+`" owner.team="`+vecT1+"\"\n")),
		refused("unclosed", "an owner value without its closing quote", mr,
			[4]int{0, 2, slot3Col, tl}, reasonOwnerUnclosed,
			vecExport(`finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="`+vecT0+`" owner.team="`+vecT1+"\"\n"+
				`ask triage.rank-by-severity owner.module="`+vecT2+"\n")),
		refused("quote-outside", "a quote in a public field, which could hide where a slot begins", mr,
			[4]int{0, 3, 4, 1}, reasonQuoteOutside,
			vecExport(vecText(vecT0, vecT1, vecT2, vecT0)+`ask"x owner.module="`+vecT0+"\"\n")),
		refused("bad-escape", "an escape other than \\\" and \\\\", mr,
			[4]int{0, 1, slot1Col + 3, 2}, reasonOwnerEscape, vecExport(vecText(`pcv\n`+vecT0[3:], vecT1, vecT2, vecT0))),
		refused("unknown-category", "an owner slot of the prohibited category", mr,
			[4]int{0, 1, len(`ask x owner.`) + 1, len("credential")}, reasonOwnerCategory,
			vecExport(`ask x owner.credential="`+vecT0+"\"\n")),
		refused("no-final-lf", "a text whose last record has no LF", mr,
			[4]int{0, 3, 1, len("ask x")}, reasonTextLF, vecExport(vecText(vecT0, vecT1, vecT2, vecT0)+"ask x")),
		refused("owner-syntax", "text after an owner value's closing quote", mr,
			[4]int{0, 1, len(`ask x owner.module="`+vecT0+`"`) + 1, 1}, reasonOwnerSyntax,
			vecExport(`ask x owner.module="`+vecT0+`"x`+"\n")),
		refused("other-profile", "an export of another profile", mr, [4]int{-1, 0, 0, 0}, reasonExportProfile,
			bytes.Replace(vecExport(vecText(vecT0, vecT1, vecT2, vecT0)), []byte("closed-diagnostic@1"), []byte("closed-diagnostic@2"), 1)),
		refused("unknown-member", "an export with a member Export@1 does not have", mr, [4]int{-1, 0, 0, 0}, reasonExportDocument,
			bytes.Replace(vecExport(vecText(vecT0, vecT1, vecT2, vecT0)), []byte(`{"kind"`), []byte(`{"key":"scan/findings","kind"`), 1)),
	}
}

func (v bindVector) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\nexpect: %s\n", v.comment, v.expect)
	if v.expect != "ok" {
		fmt.Fprintf(&b, "at: %d %d %d %d\nreason: %s\n", v.at[0], v.at[1], v.at[2], v.at[3], v.reason)
	}
	fmt.Fprintf(&b, "namespace: %s\nissued: %s\n\n%s\n", v.namespace, strings.Join(v.issued, ","), v.export)
	return b.Bytes()
}

func parseBindVector(name string, data []byte) (bindVector, error) {
	v := bindVector{name: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	header := true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case header && line == "":
			header = false
		case header && strings.HasPrefix(line, "# "):
			v.comment = line[2:]
		case header:
			k, val, ok := strings.Cut(line, ": ")
			if !ok {
				return v, fmt.Errorf("bad header line %q", line)
			}
			switch k {
			case "expect":
				v.expect = val
			case "at":
				f := strings.Fields(val)
				if len(f) != 4 {
					return v, fmt.Errorf("bad at %q", val)
				}
				for i := range f {
					n, err := strconv.Atoi(f[i])
					if err != nil {
						return v, err
					}
					v.at[i] = n
				}
			case "reason":
				v.reason = val
			case "namespace":
				v.namespace = val
			case "issued":
				v.issued = strings.Split(val, ",")
			default:
				return v, fmt.Errorf("unknown header %q", k)
			}
		case v.export == nil:
			v.export = []byte(line)
		default:
			return v, fmt.Errorf("more than one export line")
		}
	}
	return v, sc.Err()
}

func readBindVectors(t testing.TB) []bindVector {
	t.Helper()
	ents, err := os.ReadDir(bindVectorDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []bindVector
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".txt")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(bindVectorDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		v, err := parseBindVector(name, b)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out = append(out, v)
	}
	return out
}

// TestBindVectors checks every export vector against its issuance: the
// accepted ones pass, each forgery is refused with its code, position and
// reason.
func TestBindVectors(t *testing.T) {
	made := makeBindVectors()
	if *update {
		if err := os.MkdirAll(bindVectorDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, v := range made {
			if !json.Valid(v.export) {
				t.Fatalf("%s: the export is not JSON", v.name)
			}
			if err := os.WriteFile(filepath.Join(bindVectorDir, v.name+".txt"), v.encode(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := readBindVectors(t)
	if len(got) != len(made) {
		t.Fatalf("%d vectors on disk, %d made (run with -update)", len(got), len(made))
	}
	for _, v := range got {
		t.Run(v.name, func(t *testing.T) {
			for _, m := range made {
				if m.name == v.name && !bytes.Equal(m.encode(), v.encode()) {
					t.Errorf("the vector on disk is not the one the format gives (run with -update)")
				}
			}
			err := checkExport(v.export, v.namespace, v.issued)
			if v.expect == "ok" {
				if err != nil {
					t.Fatalf("checkExport: %v", err)
				}
				return
			}
			var r *receipts.Refusal
			if CodeOf(err) != receipts.Code(v.expect) || !errors.As(err, &r) {
				t.Fatalf("checkExport: %v, want %s", err, v.expect)
			}
			want := receipts.Refusal{Code: receipts.Code(v.expect), Part: v.at[0], Kind: "export", Line: v.at[1],
				Column: v.at[2], Length: v.at[3], Reason: v.reason}
			if diff := cmp.Diff(want, *r); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			var e *Error
			if !errors.As(err, &e) || e.Field != "export" || e.Op != "bind" {
				t.Errorf("error %#v", err)
			}
			// The message names the fault, never the text.
			for _, s := range append(v.issued, "git.corp.example", "redacted:", "qqqqqqqqqq") {
				if strings.Contains(err.Error(), s) {
					t.Errorf("the error quotes the export: %v", err)
				}
			}
		})
	}
}

// FuzzReadExport: the export reader never panics; every slot it reports
// lies inside its part's text, between the quotes of
// owner.<category>="…" in a field of its own, and holds no unescaped
// quote; a refusal is MALFORMED_RECORD with a position inside the text
// and a fixed reason; an accepted export with a canary planted as an
// owner value is refused by checkExport without quoting it.
func FuzzReadExport(f *testing.F) {
	for _, v := range makeBindVectors() {
		f.Add(v.export)
	}
	f.Add([]byte(`{"parts":[],"profile":"closed-diagnostic@1"}`))
	f.Add(vecExport("owner.module=\"\"\n", "\n\nowner.x=\"a\\\\\" \n"))
	f.Fuzz(func(t *testing.T, export []byte) {
		var doc exportDoc
		decoded := canon.Unmarshal(export, &doc, canon.Options{MaxBytes: maxExportBytes}) == nil
		var slots []slot
		err := readExport(export, func(s slot) error {
			slots = append(slots, s)
			return nil
		})
		if err != nil {
			var r *receipts.Refusal
			if CodeOf(err) != receipts.MalformedRecord || !errors.As(err, &r) || r.Reason == "" || r.Kind != "export" {
				t.Fatalf("refusal %#v", err)
			}
			if r.Part >= 0 && decoded && r.Part < len(doc.Parts) {
				text := doc.Parts[r.Part].Text
				if r.Line < 1 || r.Column < 1 || r.Length < 0 || r.Line > strings.Count(text, "\n")+1 {
					t.Fatalf("refusal outside the text: %+v", r)
				}
			}
			return
		}
		if !decoded {
			t.Fatalf("accepted a document the strict decoder refuses")
		}
		for _, s := range slots {
			text := doc.Parts[s.part].Text
			if s.off < 1 || s.off+s.length >= len(text) || text[s.off-1] != '"' || text[s.off+s.length] != '"' {
				t.Fatalf("slot %+v not between quotes", s)
			}
			if text[s.off:s.off+s.length] != s.value {
				t.Fatalf("slot value is not the text at its offset")
			}
			head := "owner." + s.category + "="
			if !strings.HasSuffix(text[:s.off-1], head) {
				t.Fatalf("slot %+v not after %q", s, head)
			}
			if p := s.off - 1 - len(head); p > 0 && text[p-1] != ' ' && text[p-1] != '\n' {
				t.Fatalf("slot %+v not a field of its own", s)
			}
			for i := 0; i < len(s.value); i++ {
				if s.value[i] == '\\' {
					i++
				} else if s.value[i] == '"' {
					t.Fatalf("slot value holds an unescaped quote")
				}
			}
			line := strings.Count(text[:s.off], "\n") + 1
			col := s.off - (strings.LastIndexByte(text[:s.off], '\n') + 1) + 1
			if line != s.line || col != s.col {
				t.Fatalf("slot %+v at line %d column %d", s, line, col)
			}
		}
		if len(slots) > 0 {
			// A canary planted as the first owner value is refused by
			// checkExport (it is no token) without being quoted.
			const canary = "VAULTD-CANARY-bind-export"
			s := slots[0]
			text := doc.Parts[s.part].Text
			doc.Parts[s.part].Text = text[:s.off] + canary + text[s.off+s.length:]
			planted, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			err = checkExport(planted, vecNS, vecIss)
			if CodeOf(err) == "" || strings.Contains(err.Error(), canary) {
				t.Fatalf("planted canary: %v", err)
			}
		}
	})
}

// readLineByBytes is readLine as first written, scanning a byte at a
// time: the reference FuzzReadLineAgrees holds the faster scans to.
func readLineByBytes(part, line, base int, s string, fn func(slot) error) error {
	bad := func(at, n int, reason string) error {
		return exportRefusal(receipts.MalformedRecord, part, line, at+1, n, reason)
	}
	i := 0
	for i <= len(s) {
		if !strings.HasPrefix(s[i:], "owner.") {
			j := i
			for j < len(s) && s[j] != ' ' {
				if s[j] == '"' || s[j] == '\\' {
					return bad(j, 1, reasonQuoteOutside)
				}
				j++
			}
			if j == len(s) {
				return nil
			}
			i = j + 1
			continue
		}
		c := i + len("owner.")
		j := c
		for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		if j == c || j+1 >= len(s) || s[j] != '=' || s[j+1] != '"' {
			return bad(i, j-i, reasonOwnerSyntax)
		}
		if _, code := categoryIndex(s[c:j]); code != "" {
			return bad(c, j-c, reasonOwnerCategory)
		}
		v := j + 2
		k := v
		for ; ; k++ {
			if k >= len(s) {
				return bad(v, len(s)-v, reasonOwnerUnclosed)
			}
			if s[k] == '"' {
				break
			}
			if s[k] == '\\' {
				if k+1 >= len(s) || s[k+1] != '"' && s[k+1] != '\\' {
					return bad(k, min(2, len(s)-k), reasonOwnerEscape)
				}
				k++
			}
		}
		if err := fn(slot{part: part, line: line, col: v + 1, length: k - v, off: base + v, category: s[c:j], value: s[v:k]}); err != nil {
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
	return nil
}

// FuzzReadLineAgrees: readLine reports the same slots and the same
// refusal, position included, as the byte-at-a-time reader, on any line.
func FuzzReadLineAgrees(f *testing.F) {
	for _, s := range []string{
		``, ` `, `ask x`, `owner.module="a"`, `x owner.module="a" y`, `xowner.module="a"`,
		`a "b`, `a b\c`, `owner.module="a\"b" owner.team="c\\"`, `owner.module="a"x`,
		`owner.credential="a"`, `owner.="a"`, `owner.module="a`, `a  owner.team="t" `,
		`owner.module="a" "`, `owner.owner.module="a"`, `a owner.x`, `owner.module="\q"`,
	} {
		f.Add(s)
	}
	for _, v := range makeBindVectors() {
		var doc exportDoc
		if canon.Unmarshal(v.export, &doc, canon.Options{}) == nil {
			for _, p := range doc.Parts {
				for l := range strings.SplitSeq(p.Text, "\n") {
					f.Add(l)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "\n") {
			return
		}
		var got, want []slot
		gerr := readLine(1, 2, 3, s, func(sl slot) error { got = append(got, sl); return nil })
		werr := readLineByBytes(1, 2, 3, s, func(sl slot) error { want = append(want, sl); return nil })
		if !slices.Equal(got, want) {
			t.Fatalf("slots %+v, want %+v", got, want)
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("error %v, want %v", gerr, werr)
		}
		var gr, wr *receipts.Refusal
		if errors.As(gerr, &gr) != errors.As(werr, &wr) || gr != nil && *gr != *wr {
			t.Fatalf("refusal %+v, want %+v", gr, wr)
		}
	})
}
