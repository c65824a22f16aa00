package verifier

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// pluginEnv, when set to 1, makes the test binary serve as the verifier
// plugin instead of running tests: the subprocess tests start it that way.
const pluginEnv = "PRIVACYCUT_VERIFIER_TEST_AS_PLUGIN"

// stderrMarker is what the test plugin writes to its stderr at start.
const stderrMarker = "verifier-test-plugin: serving"

// hostEnv, when set to 1, makes the test binary a host that launches a
// plugin, says "ready" on stdout once it has started, and waits to be
// killed (TestPluginDiesWithHost).
const hostEnv = "PRIVACYCUT_VERIFIER_TEST_AS_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(hostEnv) == "1" {
		serveAsHost()
		return
	}
	if os.Getenv(pluginEnv) == "1" {
		Harden = func() error {
			if os.Getenv("PRIVACYCUT_VERIFIER_TEST_HARDEN_FAIL") == "1" {
				return os.ErrPermission
			}
			// A marker on stderr: the tests check that the plugin's
			// stderr reaches the host's logger.
			fmt.Fprintln(os.Stderr, stderrMarker)
			return nil
		}
		Serve() // never returns
		return
	}
	os.Exit(m.Run())
}

// serveAsHost is the test binary as a host (hostEnv): it launches a plugin,
// waits for its start, says so and waits to be killed.
func serveAsHost() {
	exe, err := os.Executable()
	if err != nil {
		os.Exit(2)
	}
	p, err := Launch(context.Background(), exe, []string{"-test.run=^$"}, []string{pluginEnv + "=1"}, nil)
	if err != nil {
		os.Exit(2)
	}
	if _, err := p.wait(); err != nil {
		os.Exit(2)
	}
	os.Stdout.WriteString("ready\n")
	select {}
}

// selfExe returns this test binary, which the subprocess tests run as the
// plugin (pluginEnv) or as a host (hostEnv); it skips them in -short mode.
func selfExe(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
