package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/vault/vaulttest"
)

// mapping is one entry of /proc/<pid>/smaps.
type mapping struct {
	start, end uint64
	perms      string
	path       string
	flags      map[string]bool
}

func (m mapping) size() uint64 { return m.end - m.start }

// readSmaps parses /proc/<pid>/smaps (read as root: the daemon is not
// dumpable, so its /proc files belong to root).
func readSmaps(t *testing.T, pid int) []mapping {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatalf("smaps: %v", err)
	}
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && len(out) > 0 {
			for _, f := range strings.Fields(v) {
				out[len(out)-1].flags[f] = true
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(f[0], "-") || len(f[1]) != 4 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		path := ""
		if len(f) > 5 {
			path = strings.Join(f[5:], " ")
		}
		out = append(out, mapping{start: s, end: e, perms: f[1], path: path, flags: map[string]bool{}})
	}
	return out
}

// arenaRun finds the contiguous run of mappings that satisfy is, checks it
// is unique, and returns it with the mappings just before and after.
func arenaRun(t *testing.T, maps []mapping, is func(mapping) bool) (run []mapping, before, after mapping) {
	t.Helper()
	for i := 0; i < len(maps); i++ {
		if !is(maps[i]) {
			continue
		}
		if run != nil {
			t.Fatalf("more than one arena-like range in smaps")
		}
		j := i
		for j+1 < len(maps) && is(maps[j+1]) && maps[j+1].start == maps[j].end {
			j++
		}
		run = maps[i : j+1]
		if i > 0 {
			before = maps[i-1]
		}
		if j+1 < len(maps) {
			after = maps[j+1]
		}
		i = j
	}
	if run == nil {
		t.Fatalf("no arena range in smaps")
	}
	return run, before, after
}

func statusField(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return ""
}

func kB(t *testing.T, v string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	if err != nil {
		t.Fatalf("not a kB value: %q", v)
	}
	return n * 1024
}

// scanMemory reads every readable mapping of a process through
// /proc/<pid>/mem (root: CAP_SYS_PTRACE) and reports needles found, in any
// of vaulttest.Forms. Mappings that refuse to be read (secretmem: EIO,
// [vvar]) are counted as skipped. It returns the bytes scanned.
func scanMemory(t *testing.T, pid int, needles [][]byte) (hits []string, scanned, skipped int64) {
	t.Helper()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatalf("open /proc/%d/mem: %v", pid, err)
	}
	defer mem.Close()
	const maxLen = 200
	for _, m := range readSmaps(t, pid) {
		if m.perms[0] != 'r' || m.path == "[vsyscall]" {
			continue
		}
		buf := make([]byte, 1<<20)
		var carry []byte
		for off := m.start; off < m.end; off += uint64(len(buf)) {
			n := min(uint64(len(buf)), m.end-off)
			k, err := mem.ReadAt(buf[:n], int64(off))
			if err != nil && k == 0 {
				skipped += int64(m.end - off)
				break
			}
			scanned += int64(k)
			chunk := append(carry, buf[:k]...)
			for _, i := range vaulttest.Find(chunk, needles) {
				hits = append(hits, fmt.Sprintf("needle %d at %#x-%#x %s %s", i, m.start, m.end, m.perms, m.path))
			}
			carry = append([]byte(nil), chunk[max(0, len(chunk)-maxLen):]...)
		}
	}
	return hits, scanned, skipped
}
