// Package harden applies vaultd's process hardening and proves
// VaultProfile@1 by reading kernel state.
//
// Apply sets RLIMIT_CORE to {0, 0} and then, last, PR_SET_DUMPABLE to 0, and
// re-reads both. Prove gathers what the kernel says about the process and an
// arena and returns a Profile whose verdict is "accepted" only if every item
// holds:
//
//	arena           an open arena of kind memfd_secret or mlock exists
//	arena_locked    every /proc/self/smaps entry over the arena shows VmFlags lo
//	arena_dontdump  … and VmFlags dd
//	arena_backing   memfd_secret: "/secretmem (deleted)", rw-s; mlock: anonymous rw-p
//	arena_guards    the page before and the page after the arena are ---p
//	vmlck           /proc/self/status VmLck ≥ the arena's bytes
//	dumpable        prctl(PR_GET_DUMPABLE) == 0
//	core_limit      /proc/self/limits "Max core file size" soft and hard both 0
//	traceback       GOTRACEBACK unset, "", none, single or 0
//
// Any failed item makes the profile "not_proven" and its name appears in
// Reasons; Items lists every item with a detail that names addresses, sizes
// and settings, never memory contents. Swap ("none", "present", or "unknown"
// when /proc/swaps is unreadable) is informational and is not an item: the
// arena is locked either way, and a host without swap would make a swap item
// vacuous on CI.
//
// A worked example, `cut vault status --json` on an accepted vaultd:
//
//	{"schema":"VaultProfile@1","profile":"accepted",
//	 "arena":{"kind":"memfd_secret","bytes":8388608,"locked":true},
//	 "dumpable":false,"core_limit":0,"traceback":"","swap":"none",
//	 "reasons":[],"items":[{"name":"arena","ok":true,"detail":"memfd_secret, 8388608 bytes"},…],
//	 "pid":4242}
//
// # Security properties
//
// Guaranteed:
//
//   - An accepted profile was read from the kernel at the moment of the call:
//     smaps flags and mapping names for every page of the arena, VmLck, the
//     dumpable flag, the core limits. Return codes of the calls that set them
//     are not trusted.
//   - After Apply, the kernel writes no core file for the process, even with
//     a pipe core_pattern (the dumpable check comes first), and same-uid
//     processes cannot ptrace it or read its memory (/proc/pid/mem,
//     process_vm_readv): its /proc files belong to root.
//   - A raised GOTRACEBACK fails the profile, because the runtime ignores an
//     attempt to lower it and tracebacks print by-value arguments of every
//     goroutine. Unknown values fail closed.
//
// Test-only builds: the build tag diagdump leaves the process dumpable
// with its parent's core limit (for the core-scan acceptance test) and does
// not count those items against the profile; faultinject can make Prove
// report accepted without a locked arena (VAULTD_FAULT=profile-without-arena)
// so that the suites can show they catch it. Release builds contain neither,
// which tests/ checks.
//
// Not guaranteed:
//
//   - Protection from root or CAP_SYS_PTRACE: they can still read a
//     non-dumpable process's ordinary memory (only memfd_secret pages resist).
//   - Anything about the Go heap: it is neither locked nor excluded from
//     dumps; the profile covers the arena, the dumpable flag and the core
//     limit only. Host swap, hibernation, kernel crash dumps and VM snapshots
//     are host settings.
//   - Later changes. The profile is a snapshot; a uid or gid change after
//     Apply resets the dumpable flag (prctl(2)), and code calling
//     debug.SetTraceback or setrlimit afterwards is not observed.
//
// Caller's duties: drop privileges first, then call Apply, then create the
// arena and call Prove, before loading any secret; refuse reversible work
// (VAULT_PROFILE_NOT_PROVEN) unless the profile is accepted; do not start the
// daemon with GOTRACEBACK above single.
package harden
