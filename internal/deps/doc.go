// Package deps holds the module's import policy as a test: which project
// packages each package may import (docs/DESIGN.md#package-boundaries), checked with `go list -deps`.
package deps
