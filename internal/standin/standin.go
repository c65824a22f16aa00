// Package standin is the loopback stand-in for the remote model of `cut
// demo` and the tests. A [Server] plays three remote sides:
//
//   - Export@1: a POST of a disclosed export to a path whose last element
//     is a mode (".../honest") gets an answer in the shape of
//     examples/schema.json built from the tokens it received.
//   - OpenAI Chat Completions (POST [/MODE]/v1/chat/completions) and
//     Anthropic Messages (POST [/MODE]/v1/messages), written from the
//     providers' published API references: they read the request as the
//     provider does (credential header, anthropic-version, JSON body,
//     unknown members, required fields, strict schemas), answer with the
//     provider's response object (a chat.completion with one choice; a
//     message with one tool_use block named answer) holding the same
//     answer, and fail as the providers fail: error objects of the
//     provider's shape with its status codes (400, 401, 404, 405, 413, 429
//     with Retry-After, 500, 503 or 529), a refusal, a truncation at the
//     token ceiling, an answer without tool_use.
//
// Modes: Honest; Invent (one token's last character changed: a token the
// lease never issued); Unmarked (an exact token in the free-text action
// field); Refusal, Truncated, NoToolUse; RateLimited, ServerError,
// Overloaded; and a counted form ("rate-limited-2") that misbehaves for
// the first N requests to its path. Options.Script scripts the modes of the
// first requests instead. Every request is recorded exactly as received
// ([Server.Requests]), so a test can compare it with the sealed body.
//
// It is not part of privacycut's security boundary; it plays the untrusted
// remote side, so it uses plain string handling and trusts nothing it reads.
package standin

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Modes of the stand-in, chosen by the last path element of the request.
const (
	Honest   = "honest"   // answers with the tokens it received, at marked paths
	Invent   = "invent"   // alters one token's mac: a token this lease never issued
	Unmarked = "unmarked" // puts an exact token in the free-text action field
)

// Finding is one entry of the answer.
type Finding struct {
	Diagnostic  string `json:"diagnostic"`
	Severity    string `json:"severity,omitempty"`
	OwnerModule string `json:"owner_module,omitempty"`
	OwnerTeam   string `json:"owner_team,omitempty"`
	Action      string `json:"action"`
}

// Answer is the stand-in's reply, shaped by examples/schema.json.
type Answer struct {
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings"`
}

// Handler returns the stand-in with default options: the Export@1
// stand-in at any path whose last element is a mode, and the provider
// stand-ins (see Server) accepting any non-empty API key.
func Handler() http.Handler { return New(Options{}) }

// serveExport is the Export@1 stand-in: a POST to a path ending in Honest,
// Invent or Unmarked gets the answer of that mode; anything else is 404.
func serveExport(w http.ResponseWriter, r *http.Request, body []byte) {
	mode := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	if r.Method != http.MethodPost || (mode != Honest && mode != Invent && mode != Unmarked) {
		http.NotFound(w, r)
		return
	}
	ans, err := Respond(body, mode)
	if err != nil {
		http.Error(w, "not an export", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}

// Respond builds the answer to an export in the given mode.
func Respond(export []byte, mode string) (Answer, error) {
	var e struct {
		Parts []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(export, &e); err != nil {
		return Answer{}, err
	}
	texts := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		texts[i] = p.Text
	}
	return answerTexts(texts, mode), nil
}

// answerTexts builds the answer to the disclosed texts in the given mode.
func answerTexts(texts []string, mode string) Answer {
	ans := Answer{Findings: []Finding{}}
	for _, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) < 5 || f[0] != "finding" {
				continue
			}
			fd := Finding{Diagnostic: f[1], Severity: "medium", OwnerModule: slot(line, "module"), OwnerTeam: slot(line, "team")}
			module := f[2][:max(strings.IndexByte(f[2], '@'), 0)]
			fd.Action = "review the use of " + module
			for _, x := range f {
				if v, ok := strings.CutPrefix(x, "fixed="); ok {
					fd.Action = "upgrade " + module + " to " + v
					fd.Severity = "high"
				}
			}
			if f[3] == "not_affected" {
				fd.Severity, fd.Action = "none", "no action: "+module+" is not affected"
			}
			ans.Findings = append(ans.Findings, fd)
		}
	}
	first := ""
	for _, f := range ans.Findings {
		if f.OwnerModule != "" {
			first = f.OwnerModule
			break
		}
	}
	ans.Summary = "Upgrade first where a fixed version exists."
	if first != "" {
		// Prose that mentions a token: rehydration leaves it as it is.
		ans.Summary += " The most exposed module is " + first + "."
	}
	switch mode {
	case Invent:
		for i := range ans.Findings {
			if t := ans.Findings[i].OwnerModule; t != "" {
				ans.Findings[i].OwnerModule = t[:len(t)-1] + flip(t[len(t)-1])
				break
			}
		}
	case Unmarked:
		for i := range ans.Findings {
			if t := ans.Findings[i].OwnerModule; t != "" {
				ans.Findings[i].Action = t
				break
			}
		}
	}
	return ans
}

// slot returns the token in the record's owner slot of category cat, or "".
func slot(line, cat string) string {
	key := " owner." + cat + `="`
	i := strings.Index(line, key)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// flip changes one base32 character into another.
func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}
