//go:build diagdump

package main

// lowerTraceback does nothing in the diagnostic build, whose point is the
// runtime's full crash output and core.
func lowerTraceback() error { return nil }
