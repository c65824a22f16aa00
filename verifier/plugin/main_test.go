package plugin

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// stderrMarker is what the test plugin writes to its stderr at start.
const stderrMarker = "verifier-test-plugin: serving"

// hardenFailEnv, when set to 1 in a test plugin's environment, makes its
// hardening fail.
const hardenFailEnv = "PRIVACYCUT_VERIFIER_TEST_HARDEN_FAIL"

// hostEnv, when set to 1, makes the test binary a host that launches a
// plugin, says "ready" on stdout once it has started, and waits to be
// killed (TestPluginDiesWithHost).
const hostEnv = "PRIVACYCUT_VERIFIER_TEST_AS_HOST"

// TestMain makes the test binary its own plugin, as a program embedding the
// verifier is: started with Arg, it serves (ServeIfPlugin) and never runs
// the tests.
func TestMain(m *testing.M) {
	ServeIfPlugin(Options{Harden: func() error {
		if os.Getenv(hardenFailEnv) == "1" {
			return os.ErrPermission
		}
		// A marker on stderr: the tests check that the plugin's stderr
		// reaches the host's logger.
		fmt.Fprintln(os.Stderr, stderrMarker)
		return nil
	}, DialIssuer: testDial})
	if os.Getenv(hostEnv) == "1" {
		serveAsHost()
		return
	}
	os.Exit(m.Run())
}

// serveAsHost is the test binary as a host (hostEnv): it launches a plugin,
// waits for its start, says so and waits to be killed.
func serveAsHost() {
	p, err := LaunchSelf(context.Background(), nil)
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
// plugin (with Arg) or as a host (hostEnv); it skips them in -short mode.
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
