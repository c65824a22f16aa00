//go:build !faultinject

package harden

// inject returns p unchanged outside a faultinject build.
func inject(p Profile) Profile { return p }
