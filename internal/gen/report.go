package gen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// FromVocabulary returns the items of a Vocabulary@1 document (the bundled
// example's, built from the Go vulnerability database), in a fixed order,
// for generating reports over real public items.
func FromVocabulary(doc []byte) (*Vocab, error) {
	var d struct {
		Diagnostics []string            `json:"diagnostics"`
		Modules     map[string][]string `json:"modules"`
		Statuses    []string            `json:"statuses"`
		Citations   []string            `json:"citations"`
		Questions   []string            `json:"questions"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	v := &Vocab{Diagnostics: d.Diagnostics, Versions: map[string][]string{}, Statuses: d.Statuses,
		Citations: d.Citations, Questions: d.Questions}
	for m, vs := range d.Modules {
		if len(vs) > 0 {
			v.Modules = append(v.Modules, m)
			v.Versions[m] = vs
		}
	}
	sort.Strings(v.Modules)
	return v, nil
}

// Report returns a Projection@1 shaped like a scanner's report of a private
// codebase, as `cut import govulncheck` writes it: one block part of
// findings (each with its owner module and team, often its package, some
// its function and file, from a pool of distinct owners) and one query part
// asking a question. About 250 bytes a finding; 500 findings are about
// 120 KB.
func (v *Vocab) Report(findings int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	owners := max(findings/8, 1)
	for range findings {
		m := v.Modules[r.IntN(len(v.Modules))]
		vers := v.Versions[m]
		fmt.Fprintf(&b, "finding %s %s@%s %s", v.Diagnostics[r.IntN(len(v.Diagnostics))], m, vers[r.IntN(len(vers))],
			v.Statuses[r.IntN(len(v.Statuses))])
		if len(vers) > 1 && r.IntN(2) == 0 {
			fmt.Fprintf(&b, " fixed=%s", vers[r.IntN(len(vers))])
		}
		fmt.Fprintf(&b, " %s", v.Citations[r.IntN(len(v.Citations))])
		o := r.IntN(owners)
		cats := []string{"module", "team"}
		if r.IntN(2) == 0 {
			cats = append(cats, "package")
		}
		if r.IntN(4) == 0 {
			cats = append(cats, "function", "file")
		}
		for _, cat := range cats {
			fmt.Fprintf(&b, " owner.%s=\"%s\"", cat, OwnerValue(cat, o))
		}
		b.WriteByte('\n')
	}
	q := "ask " + v.Questions[r.IntN(len(v.Questions))] + " owner.team=\"" + OwnerValue("team", 0) + "\"\n"
	return Projection([]string{b.String(), q})
}
