//go:build faultinject

// A faultinject build carries deliberate defects, armed one at a time by
// the environment variable VAULTD_FAULT, so that the acceptance suites in
// tests/ can show they catch what they guard. It must never be deployed.
// This package's fault:
//
//	VAULTD_FAULT=profile-without-arena   Prove ignores the arena items and
//	                                     reports the profile accepted

package harden

import "os"

// faultArenaItems are the items the fault ignores.
var faultArenaItems = map[string]bool{
	ItemArena: true, ItemArenaLocked: true, ItemArenaDontDump: true,
	ItemArenaBacking: true, ItemArenaGuards: true, ItemVmLck: true,
}

// inject applies the armed fault to a proven profile.
func inject(p Profile) Profile {
	if os.Getenv("VAULTD_FAULT") != "profile-without-arena" {
		return p
	}
	p.Reasons = []string{}
	for _, it := range p.Items {
		if !it.OK && !faultArenaItems[it.Name] {
			p.Reasons = append(p.Reasons, it.Name)
		}
	}
	p.Profile = Accepted
	if len(p.Reasons) > 0 {
		p.Profile = NotProven
	}
	return p
}
