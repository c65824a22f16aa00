package importer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/importer"
	"github.com/privacycut/privacycut/receipts"
)

// The private names of these inputs carry "ZQX"; no error may.
const (
	cfgMsg     = `{"config":{"protocol_version":"v1.0.0","scanner_name":"govulncheck","scan_level":"symbol"}}`
	osvMsg     = `{"osv":{"id":"GO-2022-1059","references":[{"type":"REPORT","url":"https://go.dev/issue/56152"}],"database_specific":{"url":"https://pkg.go.dev/vuln/GO-2022-1059"}}}`
	frameVuln  = `{"module":"golang.org/x/text","version":"v0.3.7","package":"golang.org/x/text/language","function":"Parse"}`
	framePriv  = `{"module":"git.corp.example/ZQXledger","package":"git.corp.example/ZQXledger/i18n","function":"Pick","receiver":"*ZQXNegotiator","position":{"filename":"i18n/ZQX.go","offset":10,"line":3,"column":1}}`
	findingMsg = `{"finding":{"osv":"GO-2022-1059","fixed_version":"v0.3.8","trace":[` + frameVuln + `,` + framePriv + `]}}`
)

func stream(msgs ...string) string { return strings.Join(msgs, "\n") + "\n" }

func TestBaseStreamImports(t *testing.T) {
	v, _ := testVocab(t)
	res, err := importer.Govulncheck([]byte(stream(cfgMsg, osvMsg, findingMsg)), v, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Projection), `owner.function=\"(*ZQXNegotiator).Pick\"`) {
		t.Fatalf("projection:\n%s", res.Projection)
	}
}

func TestMalformedGovulncheck(t *testing.T) {
	v, _ := testVocab(t)
	good := stream(cfgMsg, osvMsg, findingMsg)
	withFrame := func(priv string) string {
		return stream(cfgMsg, osvMsg, `{"finding":{"osv":"GO-2022-1059","trace":[`+frameVuln+`,`+priv+`]}}`)
	}
	tests := []struct {
		name  string
		in    string
		code  receipts.Code
		msg   int    // message number, 0: do not check
		words string // in the message
	}{
		{"truncated", good[:len(good)-12], receipts.MalformedRecord, 3, "truncated message"},
		{"truncated in a string", good[:strings.Index(good, "ZQXledger")+4], receipts.MalformedRecord, 3, "truncated message"},
		{"duplicate key", stream(cfgMsg, strings.Replace(findingMsg, `"fixed_version":"v0.3.8"`, `"osv":"ZQX","fixed_version":"v0.3.8"`, 1)), receipts.MalformedRecord, 2, "duplicate key"},
		{"duplicate kind", stream(cfgMsg, `{"progress":{"message":"ZQX"},"progress":{}}`), receipts.MalformedRecord, 2, "duplicate key"},
		{"trace not an array", stream(cfgMsg, `{"finding":{"osv":"GO-2022-1059","trace":{"ZQX":1}}}`), receipts.MalformedRecord, 2, "finding.trace: expected array"},
		{"module not a string", withFrame(`{"module":7}`), receipts.MalformedRecord, 3, "finding.trace[1].module: expected string"},
		{"line not a number", withFrame(`{"module":"m","position":{"filename":"ZQX.go","line":"3"}}`), receipts.MalformedRecord, 3, "finding.trace[1].position.line: expected number"},
		{"frame not an object", withFrame(`"ZQX"`), receipts.MalformedRecord, 3, "finding.trace[1]: expected object"},
		{"receiver not a string", withFrame(`{"module":"m","receiver":["ZQX"]}`), receipts.MalformedRecord, 3, "finding.trace[1].receiver: expected string"},
		{"frame without module", withFrame(`{"package":"ZQX"}`), receipts.MalformedRecord, 3, "finding.trace[1].module: missing"},
		{"empty trace", stream(cfgMsg, `{"finding":{"osv":"GO-2022-1059","trace":[]}}`), receipts.MalformedRecord, 2, "finding.trace: missing or empty"},
		{"finding without osv", stream(cfgMsg, `{"finding":{"trace":[`+frameVuln+`]}}`), receipts.MalformedRecord, 2, "finding.osv: missing"},
		{"osv without id", stream(cfgMsg, `{"osv":{"summary":"ZQX"}}`), receipts.MalformedRecord, 2, "osv.id: missing"},
		{"osv references wrong", stream(cfgMsg, `{"osv":{"id":"GO-1","references":"ZQX"}}`), receipts.MalformedRecord, 2, "osv.references: expected array"},
		{"unknown kind", stream(cfgMsg, `{"vulns":{"ZQX":true}}`), receipts.MalformedRecord, 2, "unknown message kind"},
		{"two kinds", stream(cfgMsg, `{"progress":{"message":"x"},"osv":{"id":"ZQX"}}`), receipts.MalformedRecord, 2, "more than one kind"},
		{"empty message", stream(cfgMsg, `{}`), receipts.MalformedRecord, 2, "empty message"},
		{"body not an object", stream(cfgMsg, `{"progress":"ZQX"}`), receipts.MalformedRecord, 2, "progress: expected object"},
		{"trailing garbage", good + "ZQX", receipts.MalformedRecord, 4, "trailing data"},
		{"trailing bracket", good + "]", receipts.MalformedRecord, 4, "trailing data"},
		{"an array stream", "[" + cfgMsg + "]", receipts.MalformedRecord, 1, "expected a JSON object"},
		{"byte order mark", "\ufeff" + good, receipts.MalformedRecord, 1, "expected a JSON object"},
		{"empty", "", receipts.MalformedRecord, 0, "empty stream"},
		{"white space only", " \n\t\r\n", receipts.MalformedRecord, 0, "empty stream"},
		{"no config", stream(osvMsg, findingMsg), receipts.MalformedRecord, 1, "the first message is not config"},
		{"config twice", stream(cfgMsg, cfgMsg), receipts.MalformedRecord, 2, "config message after the first"},
		{"config late", stream(cfgMsg, osvMsg, cfgMsg), receipts.MalformedRecord, 3, "config message after the first"},
		{"protocol v2", stream(strings.Replace(cfgMsg, "v1.0.0", "v2.0.0", 1)), receipts.MalformedRecord, 1, "unsupported protocol version"},
		{"no protocol", stream(`{"config":{"scan_level":"symbol"}}`), receipts.MalformedRecord, 1, "unsupported protocol version"},
		{"unknown scan level", stream(strings.Replace(cfgMsg, `"symbol"`, `"function"`, 1)), receipts.MalformedRecord, 1, "unknown scan level"},
		{"unknown scan mode", stream(`{"config":{"protocol_version":"v1.0.0","scan_mode":"ZQX"}}`), receipts.MalformedRecord, 1, "unknown scan mode"},
		{"raw invalid UTF-8", stream(cfgMsg, strings.Replace(findingMsg, "ZQXledger/i18n", "ZQXledger/\xff", 1)), receipts.InvalidUTF8, 2, "invalid UTF-8"},
		{"lone surrogate", stream(cfgMsg, strings.Replace(findingMsg, "i18n/ZQX.go", `i18n/\ud800ZQX.go`, 1)), receipts.InvalidUTF8, 2, "surrogate"},
		{"raw control", stream(cfgMsg, strings.Replace(findingMsg, "i18n/ZQX.go", "i18n/\x01ZQX.go", 1)), receipts.MalformedRecord, 2, "control character"},
		{"too deep", stream(cfgMsg, `{"progress":{"x":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}}`), receipts.LimitExceeded, 2, "nesting too deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := importer.Govulncheck([]byte(tt.in), v, importer.Options{OnUnknown: importer.Drop})
			if res != nil {
				t.Fatal("a refused stream returned a result")
			}
			var ie *importer.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err %v, want *InputError", err)
			}
			if ie.Code != tt.code || (tt.msg != 0 && ie.Message != tt.msg) || ie.Line < 1 || ie.Column < 1 {
				t.Fatalf("%+v, want code %s message %d", ie, tt.code, tt.msg)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.words) {
				t.Fatalf("message %q lacks %q", msg, tt.words)
			}
			if strings.Contains(msg, "ZQX") {
				t.Fatalf("message holds input: %q", msg)
			}
		})
	}
}

func TestMalformedDocuments(t *testing.T) {
	v, _ := testVocab(t)
	vex := func(stmts string) string {
		return `{"@context":"https://openvex.dev/ns/v0.2.0","@id":"x","author":"ZQX","statements":[` + stmts + `]}`
	}
	stmt := `{"vulnerability":{"@id":"https://pkg.go.dev/vuln/GO-2022-1059","name":"GO-2022-1059"},"products":[{"@id":"pkg:golang/git.corp.example/ZQX@v1.0.0","subcomponents":[{"@id":"pkg:golang/golang.org/x/text@v0.3.7"}]}],"status":"affected"}`
	scanner := func(pkgs string) string {
		return `{"results":[{"source":{"path":"/src/ZQX/go.mod","type":"lockfile"},"packages":[` + pkgs + `]}]}`
	}
	pkg := `{"package":{"name":"golang.org/x/text","version":"0.3.7","ecosystem":"Go"},"vulnerabilities":[{"id":"GO-2022-1059","database_specific":{"url":"https://pkg.go.dev/vuln/GO-2022-1059"}}],"groups":[{"ids":["GO-2022-1059"]}]}`
	tests := []struct {
		name  string
		fn    importFunc
		in    string
		code  receipts.Code
		words string
	}{
		{"vex ok", importer.OpenVEX, vex(stmt), "", ""},
		{"vex not an object", importer.OpenVEX, `["ZQX"]`, receipts.MalformedRecord, "expected object"},
		{"vex other context", importer.OpenVEX, strings.Replace(vex(stmt), "openvex.dev", "ZQX.example", 1), receipts.MalformedRecord, "not an OpenVEX document"},
		{"vex no statements", importer.OpenVEX, `{"@context":"https://openvex.dev/ns/v0.2.0"}`, receipts.MalformedRecord, "statements: missing"},
		{"vex statements not array", importer.OpenVEX, `{"@context":"https://openvex.dev/ns/v0.2.0","statements":{"ZQX":1}}`, receipts.MalformedRecord, "statements: missing or not an array"},
		{"vex bad status", importer.OpenVEX, vex(strings.Replace(stmt, `"affected"`, `"exploitable"`, 1)), receipts.MalformedRecord, "statements[0].status: not an OpenVEX status"},
		{"vex no name", importer.OpenVEX, vex(strings.Replace(stmt, `,"name":"GO-2022-1059"`, ``, 1)), receipts.MalformedRecord, "statements[0].vulnerability.name: missing"},
		{"vex no vulnerability", importer.OpenVEX, vex(`{"status":"affected"}`), receipts.MalformedRecord, "statements[0].vulnerability: missing"},
		{"vex products wrong", importer.OpenVEX, vex(strings.Replace(stmt, `"products":[`, `"products":["ZQX",`, 1)), receipts.MalformedRecord, "statements[0].products[0]: expected object"},
		{"vex trailing", importer.OpenVEX, vex(stmt) + "ZQX", receipts.MalformedRecord, "trailing data"},
		{"vex product purl malformed", importer.OpenVEX, vex(strings.Replace(stmt, "pkg:golang/git.corp.example/ZQX@v1.0.0", "pkg:golang/git.corp.example/ZQX%zz@v1.0.0", 1)), receipts.MalformedRecord, "statements[0].products[0].@id: not a valid Go package URL"},
		{"vex subcomponent purl malformed", importer.OpenVEX, vex(strings.Replace(stmt, "pkg:golang/golang.org/x/text@v0.3.7", "pkg:golang/golang.org/x/text@", 1)), receipts.MalformedRecord, "statements[0].products[0].subcomponents[0].@id: not a valid Go package URL"},
		{"vex duplicate", importer.OpenVEX, vex(strings.Replace(stmt, `"status":"affected"`, `"status":"affected","status":"fixed"`, 1)), receipts.MalformedRecord, "duplicate key"},
		{"scanner ok", importer.OSVScanner, scanner(pkg), "", ""},
		{"scanner no results", importer.OSVScanner, `{"ZQX":[]}`, receipts.MalformedRecord, "results: missing or not an array"},
		{"scanner package missing", importer.OSVScanner, scanner(`{"groups":[]}`), receipts.MalformedRecord, "results[0].packages[0].package: missing"},
		{"scanner ids wrong", importer.OSVScanner, scanner(strings.Replace(pkg, `["GO-2022-1059"]`, `[7]`, 1)), receipts.MalformedRecord, "results[0].packages[0].groups[0].ids[0]: expected string"},
		{"scanner analysis wrong", importer.OSVScanner, scanner(strings.Replace(pkg, `"ids":["GO-2022-1059"]`, `"ids":["GO-2022-1059"],"experimentalAnalysis":{"GO-2022-1059":true}`, 1)), receipts.MalformedRecord, "experimentalAnalysis: expected object"},
		{"scanner called wrong", importer.OSVScanner, scanner(strings.Replace(pkg, `"ids":["GO-2022-1059"]`, `"ids":["GO-2022-1059"],"experimentalAnalysis":{"GO-2022-1059":{"called":"ZQX"}}`, 1)), receipts.MalformedRecord, "experimentalAnalysis.called: expected boolean"},
		{"scanner entry wrong", importer.OSVScanner, scanner(strings.Replace(pkg, `"vulnerabilities":[{"id":"GO-2022-1059",`, `"vulnerabilities":[{"id":"GO-2022-1059","affected":[{"ranges":[{"type":"SEMVER","events":[{"fixed":1}]}]}],`, 1)), receipts.MalformedRecord, "results[0].packages[0].vulnerabilities[0].affected[0].ranges[0].events[0].fixed: expected string"},
		{"scanner utf8", importer.OSVScanner, scanner(pkg) + "\xff", receipts.InvalidUTF8, "invalid UTF-8"},
		{"scanner trailing", importer.OSVScanner, scanner(pkg) + "{}", receipts.MalformedRecord, "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.fn([]byte(tt.in), v, importer.Options{})
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if res != nil {
				t.Fatal("a refused input returned a result")
			}
			var ie *importer.InputError
			if !errors.As(err, &ie) || ie.Code != tt.code {
				t.Fatalf("err %v, want *InputError %s", err, tt.code)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.words) || strings.Contains(msg, "ZQX") {
				t.Fatalf("message %q: want %q and no input", msg, tt.words)
			}
		})
	}
}

// TestOwnerValueRefusals: an owner value the grammar would refuse refuses
// the import, naming the finding, the slot and why (a character's code
// point, class and byte offset in the value, or a property of the whole
// value), never the value; under Drop the finding is left out and counted
// by slot. A value with quotes or backslashes is escaped and kept.
func TestOwnerValueRefusals(t *testing.T) {
	v, _ := testVocab(t)
	frame := func(fields string) string {
		return stream(cfgMsg, osvMsg, findingMsg, `{"finding":{"osv":"GO-2022-1059","trace":[`+frameVuln+`,{"module":"git.corp.example/ZQX",`+fields+`}]}}`)
	}
	tests := []struct {
		name  string
		in    string
		code  receipts.Code
		class string
		msg   string
	}{
		{"equal to a status", frame(`"package":"git.corp.example/ZQX/p","function":"affected"`), receipts.AmbiguousSpan, "owner.function",
			"finding 2: owner.function is equal to a vocabulary item (AMBIGUOUS_SPAN)"},
		{"equal to a module", frame(`"package":"golang.org/x/text"`), receipts.AmbiguousSpan, "owner.package",
			"finding 2: owner.package is equal to a vocabulary item (AMBIGUOUS_SPAN)"},
		{"control character", frame(`"position":{"filename":"ZQX\u0007.go"}`), receipts.UncoveredText, "owner.file",
			"finding 2: U+0007 BEL (a control character) at byte 3 of owner.file (UNCOVERED_TEXT)"},
		{"tab", frame(`"position":{"filename":"ZQX/x\ty.go"}`), receipts.UncoveredText, "owner.file",
			"finding 2: U+0009 TAB (a control character) at byte 5 of owner.file (UNCOVERED_TEXT)"},
		{"bidi control", frame(`"package":"git.corp.example/ZQX/\u202egpj"`), receipts.UncoveredText, "owner.package",
			"finding 2: U+202E RIGHT-TO-LEFT OVERRIDE (a bidi control) at byte 21 of owner.package (UNCOVERED_TEXT)"},
		{"zero-width", frame(`"function":"Pi\u200bck"`), receipts.UncoveredText, "owner.function",
			"finding 2: U+200B ZERO WIDTH SPACE (an invisible character) at byte 2 of owner.function (UNCOVERED_TEXT)"},
		{"not NFC", frame(`"package":"git.corp.example/ZQX/cafe\u0301"`), receipts.AmbiguousSpan, "owner.package",
			"finding 2: owner.package is not in Unicode normal form C (NFC) (AMBIGUOUS_SPAN)"},
		{"padded", frame(`"function":"Pick "`), receipts.AmbiguousSpan, "owner.function",
			"finding 2: owner.function is padded with white space (AMBIGUOUS_SPAN)"},
		{"token-shaped", frame(`"function":"pcv:ZQX"`), receipts.AmbiguousSpan, "owner.function",
			"finding 2: owner.function is shaped like a token (AMBIGUOUS_SPAN)"},
		{"line feed", frame(`"position":{"filename":"a\nb.go"}`), receipts.MalformedRecord, "owner.file",
			"finding 2: U+000A LF (a control character) at byte 1 of owner.file (MALFORMED_RECORD)"},
	}
	for _, tt := range tests {
		res, err := importer.Govulncheck([]byte(tt.in), v, importer.Options{})
		var re *importer.RefusedError
		if !errors.As(err, &re) || res != nil {
			t.Fatalf("%s: err %v, want a refusal", tt.name, err)
		}
		if re.Code != tt.code || re.Class != tt.class || re.Finding != 2 {
			t.Fatalf("%s: %+v, want %s %s finding 2", tt.name, re, tt.code, tt.class)
		}
		if want := "importer: " + tt.msg; err.Error() != want {
			t.Errorf("%s: message %q, want %q", tt.name, err, want)
		}
		if strings.Contains(err.Error(), "ZQX") {
			t.Fatalf("message holds input: %q", err)
		}
		res, err = importer.Govulncheck([]byte(tt.in), v, importer.Options{OnUnknown: importer.Drop})
		if err != nil {
			t.Fatalf("%s under Drop: %v", tt.name, err)
		}
		if st := res.Stats; st.Findings != 2 || st.Written != 1 || st.Dropped != 1 || st.Refused[tt.class] != 1 || len(st.Refused) != 1 {
			t.Fatalf("%s under Drop: stats %+v", tt.name, st)
		}
		if strings.Contains(string(res.Projection), `owner.module=\"git.corp.example/ZQX\"`) {
			t.Fatalf("%s under Drop: the dropped finding was written:\n%s", tt.name, res.Projection)
		}
	}

	res, err := importer.Govulncheck([]byte(frame(`"position":{"filename":"we\"ird\\ZQX.go"}`)), v, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Projection), `owner.file=\"we\\\"ird\\\\ZQX.go\"`) {
		t.Fatalf("quote and backslash not escaped:\n%s", res.Projection)
	}

	// More owner slots than a record may hold.
	many := "* " + strings.Repeat("@p ", 0)
	for i := 0; i < 70; i++ {
		many += "@person" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + " "
	}
	co, err := importer.ParseCodeOwners([]byte(many + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = importer.Govulncheck([]byte(stream(cfgMsg, osvMsg, findingMsg)), v, importer.Options{CodeOwners: co})
	var re *importer.RefusedError
	if !errors.As(err, &re) || re.Code != receipts.LimitExceeded || re.Finding != 1 {
		t.Fatalf("70 owners: %v", err)
	}
}
