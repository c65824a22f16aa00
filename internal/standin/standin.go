// Package standin is a loopback stand-in for the remote model of `cut demo`:
// an HTTP handler that reads a disclosed Export@1 and answers in the shape of
// examples/schema.json with the tokens it received — honestly, or in one of
// the adversarial ways a real model fails: inventing a token, or putting an
// exact token where the schema does not mark one.
//
// It is not part of privacycut's security boundary; it plays the untrusted
// remote side, so it uses plain string handling and trusts nothing it reads.
package standin

import (
	"encoding/json"
	"io"
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

// Handler returns the stand-in. A POST to any path ending in one of the
// modes gets the answer of that mode; anything else is 404.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		if r.Method != http.MethodPost || (mode != Honest && mode != Invent && mode != Unmarked) {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		ans, err := Respond(body, mode)
		if err != nil {
			http.Error(w, "not an export", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ans)
	})
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
	ans := Answer{Findings: []Finding{}}
	for _, p := range e.Parts {
		for _, line := range strings.Split(p.Text, "\n") {
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
	return ans, nil
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
