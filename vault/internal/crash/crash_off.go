//go:build !crashpoints

package crash

// Enabled reports whether this build has crash points.
const Enabled = false

// At does nothing in a release build.
func At(string) {}

// ForceArenaFallback reports false in a release build.
func ForceArenaFallback() bool { return false }
