//go:build !crashpoints

package crash

import "time"

// Enabled reports whether this build has crash points.
const Enabled = false

// At does nothing in a release build.
func At(string) {}

// ForceArenaFallback reports false in a release build.
func ForceArenaFallback() bool { return false }

// ClockOffset reports 0 in a release build.
func ClockOffset() time.Duration { return 0 }
