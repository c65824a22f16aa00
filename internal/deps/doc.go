// Package deps holds the module's import policy as a test: which project
// packages each package may import (SPEC §2), checked with `go list -deps`.
package deps
