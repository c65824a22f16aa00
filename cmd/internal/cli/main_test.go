package cli

import (
	"context"
	"crypto/sha256"
	"os"
	"testing"
)

// TestMain lets the test binary serve as the verifier plugin: `cut` re-executes
// itself with the hidden argument, and in tests "itself" is this binary. For
// the fresh-process benchmarks it also serves as `cut` itself, and as the
// baseline process that reads a file and hashes it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == pluginArg {
		os.Exit(Main(context.Background(), os.Args))
	}
	switch os.Getenv(asEnv) {
	case "cut":
		os.Exit(Main(context.Background(), append([]string{"cut"}, os.Args[1:]...)))
	case "post":
		os.Exit(barePost(os.Args[1], os.Args[2], os.Args[3]))
	case "sha256":
		data, err := os.ReadFile(os.Args[1])
		if err != nil {
			os.Exit(1)
		}
		sha256.Sum256(data)
		os.Exit(0)
	}
	code := m.Run()
	// The shared fixtures outlive every test that uses them: the built
	// binaries and the 64 MiB benchmark projection.
	for _, dir := range []string{binaries.dir, prepBench.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// asEnv makes the test binary run as `cut` ("cut"), or as a baseline
// ("sha256", "post") instead of running tests.
const asEnv = "PRIVACYCUT_TEST_AS"
