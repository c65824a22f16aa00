// Package gen generates large, realistic closed-diagnostic@1 inputs for
// benchmarks and property tests: a vocabulary shaped like the Go vulnerability
// database and projections of any size over it. It imports only the standard
// library, so the censor's, the verifier's and the grammar's tests can all use
// it without sharing any parsing code.
package gen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Vocab is a generated vocabulary and the items a projection draws from.
type Vocab struct {
	Diagnostics []string
	Modules     []string
	Versions    map[string][]string
	Statuses    []string
	Citations   []string
	Questions   []string
}

// NewVocab returns a deterministic vocabulary of about the size of the Go
// vulnerability database: 2,000 diagnostics, 300 modules with 8 versions
// each, 3,000 citations.
func NewVocab() *Vocab {
	r := rand.New(rand.NewPCG(1, 2))
	v := &Vocab{Versions: map[string][]string{},
		Statuses:  []string{"affected", "not_affected", "fixed", "under_investigation"},
		Questions: []string{"triage.rank-by-severity", "triage.suggest-upgrade", "triage.explain-reachability", "triage.summarize"}}
	for i := 0; i < 1000; i++ {
		v.Diagnostics = append(v.Diagnostics, fmt.Sprintf("GO-%d-%04d", 2020+i%5, i), fmt.Sprintf("CVE-%d-%d", 2018+i%7, 10000+i*7))
	}
	hosts := []string{"github.com", "golang.org/x", "gopkg.in", "go.etcd.io", "k8s.io", "google.golang.org"}
	for i := 0; i < 300; i++ {
		m := fmt.Sprintf("%s/%s%d/%s", hosts[i%len(hosts)], []string{"acme", "tools", "net", "cloud"}[i%4], i, []string{"api", "sdk", "server", "client", "proto"}[i%5])
		v.Modules = append(v.Modules, m)
		for j := 0; j < 8; j++ {
			v.Versions[m] = append(v.Versions[m], fmt.Sprintf("v%d.%d.%d", j%3, r.IntN(40), r.IntN(20)))
		}
		v.Versions[m] = dedup(v.Versions[m])
	}
	for i := 0; i < 3000; i++ {
		switch i % 3 {
		case 0:
			v.Citations = append(v.Citations, fmt.Sprintf("https://go.dev/issue/%d", 40000+i))
		case 1:
			v.Citations = append(v.Citations, fmt.Sprintf("https://github.com/advisories/GHSA-%04x-%04x-%04x", i, i*7%65536, i*13%65536))
		default:
			v.Citations = append(v.Citations, fmt.Sprintf("https://nvd.nist.gov/vuln/detail/CVE-2022-%d", 20000+i))
		}
	}
	return v
}

func dedup(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// JSON returns the vocabulary as a Vocabulary@1 document.
func (v *Vocab) JSON() []byte {
	doc := map[string]any{"schema": "Vocabulary@1", "revision": "gen-1", "diagnostics": v.Diagnostics,
		"modules": v.Versions, "statuses": v.Statuses, "citations": v.Citations, "questions": v.Questions}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return b
}

// Options shape a generated projection.
type Options struct {
	Seed     uint64
	Size     int // approximate bytes of text in all parts
	Parts    int // number of parts (default 4)
	Distinct int // distinct owner values per category (default 5000)
	// Categories to use for owner values (default module, package, function,
	// file, team, person, host).
	Categories []string
}

// Records returns texts, one per part, of about o.Size bytes in all.
func (v *Vocab) Records(o Options) []string {
	if o.Parts <= 0 {
		o.Parts = 4
	}
	if o.Distinct <= 0 {
		o.Distinct = 5000
	}
	if len(o.Categories) == 0 {
		o.Categories = []string{"module", "package", "function", "file", "team", "person", "host"}
	}
	r := rand.New(rand.NewPCG(o.Seed, 99))
	per := o.Size / o.Parts
	texts := make([]string, o.Parts)
	for p := range texts {
		var b strings.Builder
		b.Grow(per + 512)
		for b.Len() < per {
			if r.IntN(10) == 0 {
				fmt.Fprintf(&b, "ask %s", v.Questions[r.IntN(len(v.Questions))])
			} else {
				m := v.Modules[r.IntN(len(v.Modules))]
				vers := v.Versions[m]
				fmt.Fprintf(&b, "finding %s %s@%s %s", v.Diagnostics[r.IntN(len(v.Diagnostics))], m, vers[r.IntN(len(vers))],
					v.Statuses[r.IntN(len(v.Statuses))])
				if r.IntN(2) == 0 {
					fmt.Fprintf(&b, " fixed=%s", vers[r.IntN(len(vers))])
				}
				fmt.Fprintf(&b, " %s", v.Citations[r.IntN(len(v.Citations))])
			}
			for k := r.IntN(4); k > 0; k-- {
				cat := o.Categories[r.IntN(len(o.Categories))]
				fmt.Fprintf(&b, " owner.%s=\"%s\"", cat, OwnerValue(cat, r.IntN(o.Distinct)))
			}
			b.WriteByte('\n')
		}
		texts[p] = b.String()
	}
	return texts
}

// OwnerValue returns the n-th generated owner value of a category. Values
// are realistic (paths, names, hosts) and never vocabulary items.
func OwnerValue(cat string, n int) string {
	switch cat {
	case "module":
		return fmt.Sprintf("git.corp.example/team%d/svc%d", n%97, n)
	case "package":
		return fmt.Sprintf("git.corp.example/team%d/svc%d/internal/pkg%d", n%97, n, n%13)
	case "function":
		return fmt.Sprintf("pkg%d.(*Handler%d).Serve", n%13, n)
	case "file":
		return fmt.Sprintf("internal/pkg%d/handler_%d.go", n%13, n)
	case "team":
		return fmt.Sprintf("team-%d payments", n)
	case "person":
		return fmt.Sprintf("Person %d Müller", n)
	case "host":
		return fmt.Sprintf("node-%d.dc1.corp.example", n)
	}
	return fmt.Sprintf("value-%d", n)
}

// Projection returns a Projection@1 document over the texts.
func Projection(texts []string) []byte {
	type label struct {
		Class      string   `json:"class"`
		Weight     int      `json:"weight"`
		Categories []string `json:"categories"`
		Subjects   []string `json:"subjects"`
		Parents    []string `json:"parents"`
		Handling   []string `json:"handling"`
	}
	type part struct {
		Kind    string   `json:"kind"`
		Key     string   `json:"key"`
		Text    string   `json:"text"`
		Label   label    `json:"label"`
		Lineage []string `json:"lineage"`
	}
	doc := struct {
		Schema  string `json:"schema"`
		Profile string `json:"profile"`
		Parts   []part `json:"parts"`
	}{Schema: "Projection@1", Profile: "closed-diagnostic@1"}
	kinds := []string{"block", "history", "tool", "artifact", "continuation", "query"}
	for i, t := range texts {
		parent := fmt.Sprintf("sha256:%064x", i+1)
		doc.Parts = append(doc.Parts, part{Kind: kinds[i%len(kinds)], Key: fmt.Sprintf("part/%d", i), Text: t,
			Label: label{Class: "private", Weight: 2, Categories: []string{}, Subjects: []string{"ns/gen"},
				Parents: []string{parent}, Handling: []string{}}, Lineage: []string{parent}})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}
