// Package tests holds privacycut's acceptance suites. They build the real
// binaries (vaultd with and without the crashpoints tag, the diagnostic and
// fault-injected vaultd builds, and cut) in TestMain and drive them as an
// operator would: over the unix socket, through `cut`, with SIGTERM,
// SIGKILL, named crash points, cgroup memory limits, lowered
// RLIMIT_MEMLOCK, core dumps and /proc/<pid>/mem scans. The package has no
// API; everything is in its _test.go files. docs/ACCEPTANCE.md says how to
// run the suites, what each one proves and the figures of the last run.
//
// # Security properties
//
// What a passing run guarantees, on the machine it ran on:
//
//   - Crash (C3, K4): after every SIGKILL — at a random moment or at a named
//     crash point of a lease transition or a key rotation — every lease
//     record passes lease.Check, every acknowledged transition is still
//     there, nothing went backwards (lease.Forward against both the last
//     acknowledged and the last observed record), no terminal lease keeps a
//     data key, exactly one key epoch remains, and every live lease's map
//     still opens.
//   - Memory (R1, R2, M1, M2, M6): under a cgroup memory limit vaultd either
//     refuses with a code or is OOM-killed and recovers; with
//     RLIMIT_MEMLOCK below its arena it refuses reversible work with
//     VAULT_PROFILE_NOT_PROVEN and never panics; no planted owner value is
//     found in a core file, in a live read of the daemon's memory outside
//     the arena, or in any byte the system wrote except the rehydrated
//     result the user asked for.
//   - Each check can fail: a fault-injected build (tag faultinject) makes
//     the matching check report the violation, and that is a test too.
//
// What it does not guarantee: power-loss durability (SIGKILL keeps the page
// cache), anything about swap on a host without swap, or the absence of a
// leak the canaries did not exercise. A suite whose facility (root, a cgroup
// memory controller, memfd_secret, a core pattern that is not a pipe) is
// missing skips and names it; on the reference machine the R3 meta-test
// fails any skip.
//
// The caller's duty: run `go test ./tests/...` as root on the reference
// machine kind, and never deploy a crashpoints, diagdump or faultinject
// build.
package tests
