//go:build linux

package harden

import "golang.org/x/sys/unix"

// Apply hardens the process: RLIMIT_CORE becomes {0, 0} (the hard limit too,
// so nothing can raise it back), then PR_SET_DUMPABLE 0, last, because any
// later change of uid or gid would reset it. It then re-reads both from the
// kernel and fails if either did not take. Call it after any privilege drop
// and before the first secret is loaded.
func Apply() error {
	if diagnostic {
		return nil // a diagdump build (diag_on.go) stays dumpable
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return applyError(ItemCoreLimit, "setrlimit RLIMIT_CORE {0,0}", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return applyError(ItemDumpable, "prctl PR_SET_DUMPABLE 0", err)
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &rl); err != nil {
		return applyError(ItemCoreLimit, "getrlimit RLIMIT_CORE", err)
	}
	if rl.Cur != 0 || rl.Max != 0 {
		return applyError(ItemCoreLimit, "RLIMIT_CORE reads back non-zero", nil)
	}
	d, err := getDumpable()
	if err != nil {
		return applyError(ItemDumpable, "prctl PR_GET_DUMPABLE", err)
	}
	if d != 0 {
		return applyError(ItemDumpable, "PR_GET_DUMPABLE reads back non-zero", nil)
	}
	return nil
}

// getDumpable reads the process's dumpable flag from the kernel.
func getDumpable() (int, error) {
	return unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
}
