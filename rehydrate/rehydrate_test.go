package rehydrate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Canary owner values: none may ever appear in an error or a receipt.
const (
	canaryModule = "git.corp.example/payments/ledger-CANARY-7f3a"
	canaryTeam   = "payments-core-CANARY-91bc"
	canaryPerson = "Ada Lövelace \"CANARY-4d2e\" \\ ☃"
	canaryHidden = "git.corp.example/unreleased-CANARY-0c55"
)

type fixture struct {
	iss               *fakeIssued
	mod, team, person string // issued and disclosed
	hidden            string // issued, not disclosed
	otherMod          string // the same value's token in another lease
	cred              string // a credential-shaped token of this namespace
	mislabelled       string // a module-shaped token Lookup files under team
	secrets           []string
}

func newFixture() *fixture {
	f := &fixture{iss: newFake()}
	f.mod = f.iss.issue(testNS, "module", canaryModule)
	f.team = f.iss.issue(testNS, "team", canaryTeam)
	f.person = f.iss.issue(testNS, "person", canaryPerson)
	f.hidden = mint(testNS, "key-"+testNS, "module", canaryHidden)
	f.iss.m[f.hidden] = entry{category: "module", value: canaryHidden, disclosed: false}
	f.otherMod = mint(otherNS, "key-"+otherNS, "module", canaryModule)
	f.cred = mint(testNS, "key-"+testNS, "credential", "hunter2")
	f.mislabelled = mint(testNS, "key-"+testNS, "module", "mislabelled")
	f.iss.m[f.mislabelled] = entry{category: "team", value: "mislabelled", disclosed: true}
	f.secrets = []string{canaryModule, canaryTeam, canaryPerson, canaryHidden, "CANARY",
		f.mod, f.team, f.person, f.hidden, f.otherMod, f.cred, f.mislabelled,
		f.mod[len(f.mod)-20:], f.team[len(f.team)-20:], f.person[len(f.person)-20:]}
	return f
}

// oneFinding is a return with one finding whose owner_module is lit, a raw
// JSON string literal.
func oneFinding(lit string) string {
	return "{\n  \"findings\": [\n    {\"owner_module\": " + lit + "}\n  ]\n}\n"
}

// flip changes the character at i to another character of [a-z2-7].
func flip(tok string, i int) string {
	c := byte('a')
	if tok[i] == 'a' {
		c = 'b'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

type nearMiss struct {
	name string
	doc  string
	code receipts.Code
	path string
	lit  string // the literal the refusal must point at; "" to skip
}

func nearMissCorpus(f *fixture) []nearMiss {
	mod := f.mod
	mac := len(mod) - 20
	bad := func(name, s string, code receipts.Code) nearMiss {
		return nearMiss{name, oneFinding(jq(s)), code, "$.findings[0].owner_module", jq(s)}
	}
	var cases []nearMiss
	add := func(c ...nearMiss) { cases = append(cases, c...) }
	add(
		bad("mac one edit (substitution)", flip(mod, mac+7), receipts.TokenNotIssued),
		bad("mac one edit (last char)", flip(mod, len(mod)-1), receipts.TokenNotIssued),
		bad("mac one edit (out of alphabet)", mod[:len(mod)-1]+"1", receipts.TokenNotIssued),
		bad("mac one edit (insertion)", mod+"a", receipts.TokenNotIssued),
		bad("mac one edit (deletion)", mod[:mac]+mod[mac+1:], receipts.TokenNotIssued),
		bad("prefix one edit (substitution)", "pcw"+mod[3:], receipts.TokenNotIssued),
		bad("prefix one edit (deletion)", "pc"+mod[3:], receipts.TokenNotIssued),
		bad("prefix one edit (separator)", "pcv;"+mod[4:], receipts.TokenNotIssued),
		bad("category one edit", strings.Replace(mod, ":module:", ":modul:", 1), receipts.TokenNotIssued),
		bad("case-flipped whole token", strings.ToUpper(mod), receipts.TokenNotIssued),
		bad("case-flipped prefix", "PCV"+mod[3:], receipts.TokenNotIssued),
		bad("case-flipped category", strings.Replace(mod, ":module:", ":Module:", 1), receipts.TokenNotIssued),
		bad("case-flipped one mac char", mod[:mac]+strings.ToUpper(mod[mac:mac+1])+mod[mac+1:], receipts.TokenNotIssued),
		bad("HTML-escaped colon", strings.Replace(mod, ":", "&#58;", 1), receipts.TokenNotIssued),
		bad("HTML-escaped all colons", strings.ReplaceAll(mod, ":", "&#x3a;"), receipts.TokenNotIssued),
		bad("URL-escaped colon", strings.Replace(mod, ":", "%3A", 1), receipts.TokenNotIssued),
		bad("fullwidth colon", strings.Replace(mod, ":", "：", 1), receipts.TokenNotIssued),
		bad("padded with a leading space", " "+mod, receipts.TokenNotIssued),
		bad("padded with a trailing newline", mod+"\n", receipts.TokenNotIssued),
		bad("padded with a zero-width space", mod+"\u200b", receipts.TokenNotIssued),
		bad("wrapped in angle brackets", "<"+mod+">", receipts.TokenNotIssued),
		bad("truncated by one", mod[:len(mod)-1], receipts.TokenNotIssued),
		bad("truncated to the prefix", mod[:mac], receipts.TokenNotIssued),
		bad("empty", "", receipts.TokenNotIssued),
		bad("irreversible token", "redacted:module:1", receipts.TokenNotIssued),
		bad("token in prose at a marked path", "owned by "+mod, receipts.TokenNotIssued),
		bad("the raw value itself", canaryModule, receipts.TokenNotIssued),
		bad("namespace one edit", mod[:4]+flip(mod[4:14], 3)+mod[14:], receipts.TokenOtherNamespace),
		bad("another lease's token", f.otherMod, receipts.TokenOtherNamespace),
		bad("wrong category (team token)", f.team, receipts.TokenWrongCategory),
		bad("category relabelled (team with a module mac)", strings.Replace(mod, ":module:", ":team:", 1), receipts.TokenWrongCategory),
		bad("credential token", f.cred, receipts.TokenWrongCategory),
		bad("issued under another category", f.mislabelled, receipts.TokenWrongCategory),
		bad("module relabelled (module with a team mac)", "pcv:"+testNS+":module:"+f.team[len(f.team)-20:], receipts.TokenNotIssued),
		bad("issued, not disclosed", f.hidden, receipts.TokenNotIssued),
	)
	// A token split across two array elements: each fragment is refused.
	half := len(f.person) / 2
	add(nearMiss{"split across two array elements",
		`{"findings":[],"owners":[` + jq(f.person[:half]) + `,` + jq(f.person[half:]) + `]}`,
		receipts.TokenNotIssued, "$.owners[0]", jq(f.person[:half])})
	add(nearMiss{"split, second half first valid element",
		`{"findings":[],"owners":[` + jq(f.person) + `,` + jq(f.person[half:]) + `]}`,
		receipts.TokenNotIssued, "$.owners[1]", jq(f.person[half:])})
	add(nearMiss{"two tokens concatenated", `{"findings":[],"owners":[` + jq(f.person+f.person) + `]}`,
		receipts.TokenNotIssued, "$.owners[0]", jq(f.person + f.person)})
	// Exact tokens where nothing is marked for them.
	add(nearMiss{"exact token at an unmarked path",
		`{"findings":[],"summary":` + jq(mod) + `}`, receipts.TokenWrongPath, "$.summary", jq(mod)})
	add(nearMiss{"exact token in nested unmarked prose field",
		"{\"findings\":[\n{\"owner_module\":" + jq(mod) + "},\n{\"owner_module\":" + jq(mod) + ",\n \"advice\":" + jq(f.team) + "}]}",
		receipts.TokenWrongPath, "$.findings[1].advice", jq(f.team)})
	add(nearMiss{"exact token at a path marked for another purpose",
		`{"findings":[],"audit_owner":` + jq(mod) + `}`, receipts.TokenWrongPath, "$.audit_owner", jq(mod)})
	// Token-shaped strings that are not this lease's tokens, at unmarked
	// paths: refused as at a marked one (invented or altered; another
	// namespace), not passed through as prose.
	altered := flip(mod, len(mod)-3)
	add(nearMiss{"altered token at an unmarked path",
		`{"findings":[],"summary":` + jq(altered) + `}`, receipts.TokenNotIssued, "$.summary", jq(altered)})
	add(nearMiss{"another lease's token at an unmarked path",
		`{"findings":[],"summary":` + jq(f.otherMod) + `}`, receipts.TokenOtherNamespace, "$.summary", jq(f.otherMod)})
	add(nearMiss{"issued, not disclosed, at an unmarked path",
		`{"findings":[{"owner_module":` + jq(mod) + `,"advice":` + jq(f.hidden) + `}]}`,
		receipts.TokenNotIssued, "$.findings[0].advice", jq(f.hidden)})
	// Over-cardinality: the marking allows 3 at $.findings[*].owner_module.
	four := `{"findings":[` + strings.Repeat(`{"owner_module":`+jq(mod)+`},`, 3) + `{"owner_module":` + jq(mod) + `}]}`
	add(nearMiss{"over cardinality (same token)", four, receipts.TokenOverCardinality, "$.findings[3].owner_module", jq(mod)})
	mixed := `{"findings":[{"owner_module":` + jq(mod) + `},{"owner_module":` + jq(f.mislabelled) + `}]}`
	add(nearMiss{"valid substitution before a violation", mixed, receipts.TokenWrongCategory, "$.findings[1].owner_module", jq(f.mislabelled)})
	// JSON-level refusals.
	add(nearMiss{"token as an object key",
		`{"findings":[{"owner_module":` + jq(mod) + `,` + jq(mod) + `:"x"}]}`,
		receipts.MalformedRecord, "$.findings[0]", jq(mod)})
	add(nearMiss{"undeclared member", `{"findings":[],"extra":"x"}`, receipts.MalformedRecord, "$", `"extra"`})
	add(nearMiss{"missing required member", `{"findings":[{"advice":"x"}]}`, receipts.MalformedRecord, "$.findings[0]", `{"advice":"x"}`})
	add(nearMiss{"number at a marked path", oneFinding("42"), receipts.MalformedRecord, "$.findings[0].owner_module", "42"})
	add(nearMiss{"null at a marked path", oneFinding("null"), receipts.MalformedRecord, "$.findings[0].owner_module", "null"})
	add(nearMiss{"object at a marked path", oneFinding(`{"t":` + jq(mod) + `}`), receipts.MalformedRecord, "$.findings[0].owner_module", `{"t":` + jq(mod) + `}`})
	add(nearMiss{"array where an object is due", `[` + jq(mod) + `]`, receipts.MalformedRecord, "$", `[` + jq(mod) + `]`})
	long := strings.Repeat("x", 65)
	add(nearMiss{"longer than maxLength", oneFinding(jq(long)), receipts.MalformedRecord, "$.findings[0].owner_module", jq(long)})
	add(nearMiss{"more items than maxItems", `{"findings":[],"owners":[` + strings.Repeat(jq(f.person)+`,`, 3) + jq(f.person) + `]}`,
		receipts.MalformedRecord, "$.owners[3]", jq(f.person)})
	add(nearMiss{"missing required in the 3rd item", `{"findings":[{"owner_module":` + jq(mod) + `},{"owner_module":` + jq(mod) + `},{}]}`,
		receipts.MalformedRecord, "$.findings[2]", `{}`})
	add(nearMiss{"duplicate key", `{"findings":[],"summary":"a","summary":` + jq(mod) + `}`, receipts.MalformedRecord, "", ""})
	add(nearMiss{"invalid UTF-8", "{\"findings\":[],\"summary\":\"\xff\"}", receipts.InvalidUTF8, "", ""})
	add(nearMiss{"trailing data", `{"findings":[]} ` + jq(mod), receipts.MalformedRecord, "", ""})
	add(nearMiss{"lone surrogate", `{"findings":[],"summary":"\ud800"}`, receipts.InvalidUTF8, "", ""})
	return cases
}

func TestNearMissCorpus(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	for _, c := range nearMissCorpus(newFixture()) {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			res, err := Rehydrate([]byte(c.doc), s, testLease, f.iss)
			var r *receipts.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Rehydrate error = %v, want a *receipts.Refusal", err)
			}
			if diff := cmp.Diff(
				struct {
					Code receipts.Code
					Path string
				}{c.code, c.path},
				struct {
					Code receipts.Code
					Path string
				}{r.Code, r.Path}); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if res.Output != nil || res.FinalDigest != "" || res.Substitutions != nil {
				t.Errorf("a refused return yielded a result: %d output bytes", len(res.Output))
			}
			if _, appends := f.iss.counts(); appends != 0 {
				t.Errorf("AppendValue called %d times on a refused return", appends)
			}
			if r.Line < 1 || r.Column < 1 {
				t.Errorf("refusal not positioned: line %d col %d", r.Line, r.Column)
			}
			if c.lit != "" {
				off := offsetOf(c.doc, r.Line, r.Column)
				if off < 0 || off+r.Length > len(c.doc) || c.doc[off:off+r.Length] != c.lit {
					t.Errorf("refusal at line %d col %d length %d does not point at the refused literal", r.Line, r.Column, r.Length)
				}
			}
			assertNoSecrets(t, "error text", err.Error(), f.secrets...)
			assertNoSecrets(t, "refusal", fmt.Sprintf("%+v %#v", r, r), f.secrets...)
			if r.Kind != "return" || r.Part != -1 {
				t.Errorf("refusal of a return has part %d kind %q, want -1 and \"return\"", r.Part, r.Kind)
			}
			reason, jerr := canon.Marshal(r)
			if jerr != nil {
				t.Fatal(jerr)
			}
			assertNoSecrets(t, "refusal document", string(reason), f.secrets...)

			// Validate alone refuses the same way and plans nothing.
			p, verr := Validate([]byte(c.doc), s, testLease, f.iss)
			if p != nil || verr == nil || verr.Error() != err.Error() {
				t.Errorf("Validate = %v, %v; want nil plan and %v", p, verr, err)
			}
		})
	}
}

// The order of the checks at a marked path decides which code a token gets
// when several rules fail, and Lookup is not asked about tokens the shape
// already excludes.
func TestLookupOnlyWhenShapeAllows(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	for _, tok := range []string{f.otherMod, f.team, f.cred, "pcv:" + testNS, flip(f.mod, 0)} {
		doc := oneFinding(jq(tok))
		if _, err := Rehydrate([]byte(doc), s, testLease, f.iss); err == nil {
			t.Fatal("accepted a bad token")
		}
	}
	// Object keys are never looked up, even when they are exact tokens.
	for _, doc := range []string{
		`{` + jq(f.mod) + `:"x","findings":[]}`,
		`{"findings":[{` + jq(f.mod) + `:` + jq(f.mod) + `}]}`,
	} {
		if _, err := Rehydrate([]byte(doc), s, testLease, f.iss); err == nil {
			t.Fatal("accepted a token as a key")
		}
	}
	if n, _ := f.iss.counts(); n != 0 {
		t.Errorf("Lookup called %d times for tokens excluded by shape, namespace or category", n)
	}
}

func TestRehydrateSubstitutes(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	doc := `{
	  "summary": "three findings",
	  "findings": [
	    {"owner_module": ` + jq(f.mod) + `, "owner_team": ` + jq(f.team) + `, "advice": "upgrade"},
	    {"advice": "also \u00e9 \/ here", "owner_module": ` + jq(f.mod) + `}
	  ],
	  "owners": [` + jq(f.person) + `]
	}`
	res, err := Rehydrate([]byte(doc), s, testLease, f.iss)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"findings":[{"advice":"upgrade","owner_module":` + jq(canaryModule) + `,"owner_team":` + jq(canaryTeam) + `},` +
		`{"advice":"also é / here","owner_module":` + jq(canaryModule) + `}],"owners":[` + jq(canaryPerson) + `],"summary":"three findings"}`
	if diff := cmp.Diff(want, string(res.Output)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	canonical, err := canon.Canonicalize(res.Output)
	if err != nil || string(canonical) != string(res.Output) {
		t.Errorf("output is not canonical JSON (%v)", err)
	}
	if diff := cmp.Diff(Result{
		Output:        res.Output,
		ReturnDigest:  receipts.SHA256([]byte(doc)),
		FinalDigest:   receipts.SHA256([]byte(want)),
		Substitutions: map[string]int{"module": 2, "team": 1, "person": 1},
	}, res, cmpopts.IgnoreUnexported(Result{})); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if lookups, appends := f.iss.counts(); lookups != 2*4 || appends != 2*4 {
		t.Errorf("Lookup %d, AppendValue %d times; want 8 and 8 (validate, then twice per value in apply)", lookups, appends)
	}
}

// Prose is kept byte for byte and never scanned: Lookup sees no string that
// is not exactly token-shaped (those are refused, nearMisses).
func TestProseUntouchedAndUnscanned(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	prose := []string{
		"the owner is " + f.mod + ", ask them",
		f.mod + " " + f.team,
		f.mod + f.mod,
		"(" + f.person + ")",
		strings.ToUpper(f.mod),
		"owned by " + f.otherMod,
		"",
		"pcv:",
		strings.Repeat(f.team[:30], 100),
		// A token's length and fields with one separator not a colon: not
		// token-shaped, so prose.
		strings.Replace(f.mod, testNS+":", testNS+"X", 1),
		strings.Replace(f.mod, ":module:", ":module;", 1),
	}
	var findings []string
	for _, p := range prose {
		findings = append(findings, `{"owner_module":`+jq(f.mod)+`,"advice":`+jq(p)+`}`)
	}
	doc := `{"findings":[` + strings.Join(findings[:3], ",") + `],"summary":` + jq(strings.Join(prose, "|")) +
		`,"owners":[` + jq(f.person) + `]}`
	res, err := Rehydrate([]byte(doc), mustSchema(t, strings.Replace(testSchemaDoc, `"max": 3`, `"max": 30`, 1)), testLease, f.iss)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Findings []struct {
			OwnerModule string `json:"owner_module"`
			Advice      string `json:"advice"`
		} `json:"findings"`
		Owners  []string `json:"owners"`
		Summary string   `json:"summary"`
	}
	if err := canon.Unmarshal(res.Output, &out, canon.Options{}); err != nil {
		t.Fatal(err)
	}
	for i := range out.Findings {
		if out.Findings[i].Advice != prose[i] {
			t.Errorf("finding %d: prose changed", i)
		}
		if out.Findings[i].OwnerModule != canaryModule {
			t.Errorf("finding %d: marked token not substituted", i)
		}
	}
	if out.Summary != strings.Join(prose, "|") {
		t.Error("summary prose changed")
	}
	// Validation looks up the 3 marked modules and the person; apply
	// looks them up again. No prose string is ever looked up.
	f.iss.mu.Lock()
	got := append([]string(nil), f.iss.lookups...)
	f.iss.mu.Unlock()
	want := []string{f.mod, f.mod, f.mod, f.person, f.mod, f.mod, f.mod, f.person}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lookup calls (-want +got):\n%s", diff)
	}

	// Each prose string alone at an unmarked path: kept, never looked up.
	for _, p := range prose {
		f := newFixture()
		doc := `{"findings":[],"summary":` + jq(p) + `}`
		res, err := Rehydrate([]byte(doc), s, testLease, f.iss)
		if err != nil {
			t.Fatalf("prose refused: %v", err)
		}
		if want := `{"findings":[],"summary":` + jq(p) + `}`; string(res.Output) != want {
			t.Error("prose changed")
		}
		if lookups, appends := f.iss.counts(); lookups != 0 || appends != 0 {
			t.Errorf("prose %d bytes: Lookup %d, AppendValue %d (want 0, 0)", len(p), lookups, appends)
		}
	}
}

// JSON escapes are part of JSON, not of the token: a token written with
// \u escapes is the same string and is recognized; an HTML escape is not.
func TestJSONEscapesAreDecodedFirst(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	lit := `"` + strings.ReplaceAll(f.mod, ":", `\u003a`) + `"`
	res, err := Rehydrate([]byte(oneFinding(lit)), s, testLease, f.iss)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"findings":[{"owner_module":` + jq(canaryModule) + `}]}`; string(res.Output) != want {
		t.Errorf("output = %s, want %s", res.Output, want)
	}
}

func TestPurposeSelectsMarkings(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	audit := Lease{Namespace: testNS, Purpose: "audit"}
	// Under "audit", $.audit_owner is marked and $.findings[*].owner_module is not.
	res, err := Rehydrate([]byte(`{"findings":[],"audit_owner":`+jq(f.mod)+`}`), s, audit, f.iss)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"audit_owner":` + jq(canaryModule) + `,"findings":[]}`; string(res.Output) != want {
		t.Errorf("output = %s", res.Output)
	}
	_, err = Rehydrate([]byte(oneFinding(jq(f.mod))), s, audit, f.iss)
	var r *receipts.Refusal
	if !errors.As(err, &r) || r.Code != receipts.TokenWrongPath || r.Path != "$.findings[0].owner_module" {
		t.Errorf("token at a path marked for another purpose: %v", err)
	}
	// Under a purpose nothing is marked for, non-token strings everywhere pass.
	res, err = Rehydrate([]byte(oneFinding(`"anything"`)), s, Lease{Namespace: testNS, Purpose: "other"}, f.iss)
	if err != nil || string(res.Output) != `{"findings":[{"owner_module":"anything"}]}` {
		t.Errorf("unmarked purpose: %s, %v", res.Output, err)
	}
}

func TestCallerErrors(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	doc := []byte(oneFinding(jq(f.mod)))
	for _, c := range []struct {
		name string
		s    *Schema
		l    Lease
		iss  Issued
		want error
	}{
		{"nil schema", nil, testLease, f.iss, ErrInvalidArgument},
		{"nil issued", s, testLease, nil, ErrInvalidArgument},
		{"short namespace", s, Lease{Namespace: "abc", Purpose: testPurpose}, f.iss, ErrInvalidLease},
		{"upper-case namespace", s, Lease{Namespace: "ABCDEFGHIJ", Purpose: testPurpose}, f.iss, ErrInvalidLease},
		{"empty purpose", s, Lease{Namespace: testNS}, f.iss, ErrInvalidLease},
	} {
		if _, err := Rehydrate(doc, c.s, c.l, c.iss); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	var p *Plan
	if _, err := p.Apply(f.iss); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil plan: %v", err)
	}
}

func TestReturnTooLarge(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	doc := make([]byte, MaxReturnBytes+1)
	_, err := Rehydrate(doc, s, testLease, newFake())
	var r *receipts.Refusal
	if !errors.As(err, &r) || r.Code != receipts.LimitExceeded {
		t.Errorf("err = %v, want LIMIT_EXCEEDED", err)
	}
}

var errVault = errors.New("vault: map unavailable")

// badIssued misbehaves at Apply in one of several ways.
type badIssued struct {
	*fakeIssued
	mode  string
	calls int
}

func (b *badIssued) Lookup(tok []byte) (string, bool) {
	if b.mode == "revoked" {
		return "", false
	}
	return b.fakeIssued.Lookup(tok)
}

func (b *badIssued) AppendValue(dst, tok []byte) ([]byte, error) {
	b.calls++
	switch b.mode {
	case "error":
		return append(dst, "partial"...), errVault
	case "invalid":
		return append(dst, 0xff, 0xfe), nil
	case "empty":
		return dst, nil
	case "grows":
		if b.calls > 1 {
			return append(dst, canaryModule+canaryModule...), nil
		}
	case "huge":
		// Larger than the scratch buffer: AppendValue must reallocate.
		return append(dst, strings.Repeat("v", 10000)...), nil
	}
	return b.fakeIssued.AppendValue(dst, tok)
}

func TestApplyFailsClosed(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	for _, c := range []struct {
		mode string
		want error
	}{
		{"error", errVault},
		{"invalid", ErrInvalidValue},
		{"empty", ErrInvalidValue},
		{"revoked", ErrStalePlan},
		{"grows", ErrStalePlan},
	} {
		t.Run(c.mode, func(t *testing.T) {
			f := newFixture()
			doc := []byte(oneFinding(jq(f.mod)))
			p, err := Validate(doc, s, testLease, f.iss)
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Apply(&badIssued{fakeIssued: f.iss, mode: c.mode})
			if err == nil {
				t.Fatal("Apply succeeded")
			}
			if !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
			if res.Output != nil || res.FinalDigest != "" {
				t.Error("a failed Apply yielded output")
			}
			assertNoSecrets(t, "error", err.Error(), f.secrets...)
		})
	}
	// A value larger than the scratch buffer still works.
	f := newFixture()
	res, err := Rehydrate([]byte(oneFinding(jq(f.mod))), s, testLease, &badIssued{fakeIssued: f.iss, mode: "huge"})
	if err != nil || !strings.Contains(string(res.Output), strings.Repeat("v", 10000)) {
		t.Errorf("huge value: %v", err)
	}
}

// A Plan is immutable: concurrent Applies and concurrent Rehydrates of
// different leases over one schema give identical, independent results.
func TestConcurrent(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	f := newFixture()
	doc := []byte(`{"findings":[{"owner_module":` + jq(f.mod) + `,"owner_team":` + jq(f.team) + `}],"owners":[` + jq(f.person) + `]}`)
	p, err := Validate(doc, s, testLease, f.iss)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Apply(f.iss)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	errs := make(chan error, 2*n)
	for i := 0; i < n; i++ {
		go func() {
			got, err := p.Apply(f.iss)
			if err == nil && string(got.Output) != string(want.Output) {
				err = errors.New("different output")
			}
			errs <- err
		}()
		go func() {
			// Another lease with the same values: its tokens differ and
			// ours are foreign to it.
			g := newFake()
			ns := fmt.Sprintf("lease%05d", i)
			ns = strings.NewReplacer("0", "a", "1", "b", "8", "c", "9", "d").Replace(ns)
			tok := g.issue(ns, "module", canaryModule)
			if tok == f.mod {
				errs <- errors.New("two leases share a token")
				return
			}
			if _, err := Rehydrate(doc, s, Lease{Namespace: ns, Purpose: testPurpose}, g); err == nil {
				errs <- errors.New("a lease accepted another lease's tokens")
				return
			}
			_, err := Rehydrate([]byte(oneFinding(jq(tok))), s, Lease{Namespace: ns, Purpose: testPurpose}, g)
			errs <- err
		}()
	}
	for i := 0; i < 2*n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Objects are written with members in RFC 8785 order, small or large.
func TestOutputMemberOrder(t *testing.T) {
	var props, members []string
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("p%02d", i)
		if i%2 == 0 {
			name = strings.ToUpper(name) // upper case sorts first
		}
		props = append(props, `"`+name+`":{"type":"string"}`)
		members = append([]string{`"` + name + `":"v` + name + `"`}, members...)
	}
	schema := `{"type":"object","properties":{"big":{"type":"object","properties":{` + strings.Join(props, ",") + `}},` +
		`"small":{"type":"object","properties":{"b":{"type":"string"},"a_":{"type":"string"},"a":{"type":"string"},"B":{"type":"string"},"a-":{"type":"string"}}}}}`
	doc := `{"small":{"b":"1","a_":"2","a":"3","B":"4","a-":"5"},"big":{` + strings.Join(members, ",") + `}}`
	res, err := Rehydrate([]byte(doc), mustSchema(t, schema), testLease, newFake())
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := canon.Canonicalize([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(canonical), string(res.Output)); diff != "" {
		t.Errorf("output (-canonical +got):\n%s", diff)
	}
}

// fetch clears a scratch buffer that AppendValue outgrew.
func TestFetchClearsOutgrownScratch(t *testing.T) {
	f := newFixture()
	w := writer{iss: f.iss, scratch: make([]byte, 0, 4)}
	old := w.scratch[:cap(w.scratch)]
	copy(old, "SECR")
	v, err := w.fetch([]byte(f.mod))
	if err != nil || string(v) != canaryModule {
		t.Fatalf("fetch = %q, %v", v, err)
	}
	if string(old) != "\x00\x00\x00\x00" {
		t.Errorf("outgrown scratch not cleared: %q", old)
	}
	w.wipe()
	if strings.Trim(string(v[:cap(v)]), "\x00") != "" {
		t.Error("wipe left the value in the scratch buffer")
	}
}
