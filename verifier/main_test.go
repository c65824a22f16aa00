package verifier

import (
	"fmt"
	"os"
	"testing"
)

// pluginEnv, when set to 1, makes the test binary serve as the verifier
// plugin instead of running tests: the subprocess tests start it that way.
const pluginEnv = "PRIVACYCUT_VERIFIER_TEST_AS_PLUGIN"

// stderrMarker is what the test plugin writes to its stderr at start.
const stderrMarker = "verifier-test-plugin: serving"

func TestMain(m *testing.M) {
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
