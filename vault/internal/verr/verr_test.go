package verr

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
	"golang.org/x/sys/unix"
)

var errSentinel = errors.New("sentinel")

// testError is a package's Error as the vault packages declare theirs.
type testError struct {
	Core
	At string
}

func (e *testError) Error() string { return e.Text("pkg", e.At, "") }

type otherError struct{ Core }

func (e *otherError) Error() string { return e.Text("other", "", "") }

func TestText(t *testing.T) {
	for _, tc := range []struct {
		core     Core
		at, note string
		want     string
	}{
		{Core{Op: "op", Err: errSentinel}, "", "", "pkg: op: sentinel"},
		{Core{Code: receipts.LimitExceeded, Op: "op", Err: errSentinel}, " at byte 7", "", "pkg: op at byte 7: sentinel (LIMIT_EXCEEDED)"},
		{Core{Code: receipts.LimitExceeded, Op: "op", Err: errSentinel, Sys: unix.EAGAIN}, "", "fixed note",
			"pkg: op: sentinel: fixed note: resource temporarily unavailable (LIMIT_EXCEEDED)"},
		{Core{Code: receipts.LeaseNotActive, Op: "claim"}, " (field lease)", "", "pkg: claim (field lease): LEASE_NOT_ACTIVE"},
		{Core{Op: "op"}, "", "", "pkg: op"},
		{Core{Op: "op", Sys: unix.ENOSYS}, "", "", "pkg: op: function not implemented"},
	} {
		if got := tc.core.Text("pkg", tc.at, tc.note); got != tc.want {
			t.Errorf("Text(%+v) = %q, want %q", tc.core, got, tc.want)
		}
	}
}

func TestUnwrap(t *testing.T) {
	for _, tc := range []struct {
		core Core
		want []error
	}{
		{Core{Err: errSentinel, Sys: unix.EAGAIN}, []error{errSentinel, unix.EAGAIN}},
		{Core{Err: errSentinel}, []error{errSentinel}},
		{Core{Sys: unix.EAGAIN}, []error{unix.EAGAIN}},
		{Core{Code: receipts.LimitExceeded}, nil},
	} {
		if diff := cmp.Diff(tc.want, tc.core.Unwrap(), cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
			t.Errorf("Unwrap(%+v) (-want +got):\n%s", tc.core, diff)
		}
	}
	err := error(&testError{Core: Core{Op: "op", Err: errSentinel, Sys: unix.EAGAIN}})
	if !errors.Is(err, errSentinel) || !errors.Is(err, unix.EAGAIN) {
		t.Errorf("errors.Is misses the sentinel or the system error of %v", err)
	}
}

// TestCodeOf: the code is read from the first error of the asked type,
// and an error of another package's type does not answer for it.
func TestCodeOf(t *testing.T) {
	inner := &testError{Core: Core{Code: receipts.LimitExceeded, Op: "alloc", Err: errSentinel}}
	wrapped := &otherError{Core: Core{Op: "outer", Err: errSentinel, Sys: inner}}
	if got := CodeOf[*testError](wrapped); got != receipts.LimitExceeded {
		t.Errorf("CodeOf through a wrapper = %q", got)
	}
	if got := CodeOf[*otherError](wrapped); got != "" {
		t.Errorf("CodeOf of the uncoded wrapper = %q", got)
	}
	if got := CodeOf[*otherError](inner); got != "" {
		t.Errorf("CodeOf of another type = %q", got)
	}
	if got := CodeOf[*testError](errSentinel); got != "" {
		t.Errorf("CodeOf of a plain error = %q", got)
	}
}
