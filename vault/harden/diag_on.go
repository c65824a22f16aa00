//go:build diagdump

// A diagdump build is a diagnostic build for the core-dump acceptance test
// (tests/, M1) and must never be deployed: Apply leaves the process as it
// is (dumpable, with the core limit its parent gave it), and Prove does not
// hold the dumpable, core_limit and traceback items against the profile,
// so that a lease can be granted and the daemon then aborted into a core
// file whose contents the test scans. Every arena item is still proven:
// the test is about what reaches the core, and the arena must be excluded
// from it by its own flags.

package harden

// diagnostic makes Apply a no-op.
const diagnostic = true

// diagnosed are the items a diagnostic build does not require.
var diagnosed = map[string]bool{ItemDumpable: true, ItemCoreLimit: true, ItemTraceback: true}

// diagnose marks the diagnosed items as holding, with a detail that says
// why, and decides the verdict again from the other items.
func diagnose(p Profile) Profile {
	p.Reasons = []string{}
	for i, it := range p.Items {
		if diagnosed[it.Name] && !it.OK {
			p.Items[i] = Item{Name: it.Name, OK: true, Detail: "diagnostic build (diagdump), not enforced: " + it.Detail}
		}
		if !p.Items[i].OK {
			p.Reasons = append(p.Reasons, it.Name)
		}
	}
	p.Profile = Accepted
	if len(p.Reasons) > 0 {
		p.Profile = NotProven
	}
	return p
}
