//go:build !diagdump

package harden

// diagnostic is true only in a diagdump build (see diag_on.go).
const diagnostic = false

// diagnose returns p unchanged outside a diagdump build.
func diagnose(p Profile) Profile { return p }
