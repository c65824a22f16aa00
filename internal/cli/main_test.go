package cli

import (
	"context"
	"os"
	"testing"
)

// TestMain lets the test binary serve as the verifier plugin: `cut` re-executes
// itself with the hidden argument, and in tests "itself" is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == pluginArg {
		os.Exit(Main(context.Background(), os.Args))
	}
	os.Exit(m.Run())
}
