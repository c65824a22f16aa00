//go:build !unix

package rehydrate

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
