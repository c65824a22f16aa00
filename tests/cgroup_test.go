package tests

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// cgroupInfo says where this process's memory controller is.
type cgroupInfo struct {
	version int    // 1 or 2
	parent  string // this process's own cgroup directory in the memory hierarchy
}

// findCgroup locates a writable memory controller: cgroup v1's memory
// hierarchy (memory.limit_in_bytes) first, then cgroup v2 (memory.max). It
// proves writability by creating and removing a child.
func findCgroup() (cgroupInfo, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupInfo{}, fmt.Errorf("cannot read /proc/self/cgroup: %v", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupInfo{}, fmt.Errorf("cannot read /proc/self/mountinfo: %v", err)
	}
	var v1Path, v2Path string
	haveV1, haveV2 := false, false
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2Path, haveV2 = f[2], true
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				v1Path, haveV1 = f[2], true
			}
		}
	}
	v1Mount, v2Mount := "", ""
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if o == "memory" {
					v1Mount = pf[4]
				}
			}
		case "cgroup2":
			v2Mount = pf[4]
		}
	}
	var reasons []string
	if haveV1 && v1Mount != "" {
		info := cgroupInfo{version: 1, parent: filepath.Join(v1Mount, v1Path)}
		if err := info.probe(); err == nil {
			return info, nil
		} else {
			reasons = append(reasons, "cgroup v1 memory: "+err.Error())
		}
	} else {
		reasons = append(reasons, "no cgroup v1 memory hierarchy")
	}
	if haveV2 && v2Mount != "" {
		info := cgroupInfo{version: 2, parent: filepath.Join(v2Mount, v2Path)}
		ctl, err := os.ReadFile(filepath.Join(info.parent, "cgroup.controllers"))
		switch {
		case err != nil:
			reasons = append(reasons, "cgroup v2: "+err.Error())
		case !containsWord(string(ctl), "memory"):
			reasons = append(reasons, fmt.Sprintf("cgroup v2 at %s has no memory controller (controllers: %q)", info.parent, strings.TrimSpace(string(ctl))))
		default:
			if err := info.probe(); err == nil {
				return info, nil
			} else {
				reasons = append(reasons, "cgroup v2 memory: "+err.Error())
			}
		}
	} else {
		reasons = append(reasons, "no cgroup v2 hierarchy")
	}
	return cgroupInfo{}, errors.New(strings.Join(reasons, "; "))
}

func containsWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// limitFile is the file that holds the memory limit.
func (c cgroupInfo) limitFile() string {
	if c.version == 1 {
		return "memory.limit_in_bytes"
	}
	return "memory.max"
}

// probe creates a child, checks that it has a memory limit file (enabling
// the controller for children on v2 if needed), and removes it.
func (c cgroupInfo) probe() error {
	dir := filepath.Join(c.parent, "privacycut-test-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	defer os.Remove(dir)
	if _, err := os.Stat(filepath.Join(dir, c.limitFile())); err != nil {
		if c.version == 1 {
			return err
		}
		if werr := os.WriteFile(filepath.Join(c.parent, "cgroup.subtree_control"), []byte("+memory"), 0); werr != nil {
			return fmt.Errorf("memory controller not delegated to children: %v", werr)
		}
		if _, err := os.Stat(filepath.Join(dir, c.limitFile())); err != nil {
			return err
		}
	}
	return nil
}

// cgroup is one test's memory cgroup.
type cgroup struct {
	info cgroupInfo
	dir  string
}

// newCgroup creates <own cgroup>/privacycut-test-<random> and removes it
// when the test ends (killing anything left in it first).
func newCgroup(t *testing.T) *cgroup {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	c := &cgroup{info: cgroupEnv, dir: filepath.Join(cgroupEnv.parent, "privacycut-test-"+hex.EncodeToString(b))}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := c.remove(); err != nil {
			t.Errorf("remove cgroup %s: %v", c.dir, err)
		}
	})
	return c
}

// remove removes the cgroup. The processes the test put into it are its
// own children and have been killed and reaped by then (the daemon's
// cleanup runs first); anything still listed is killed so that the rmdir
// cannot fail for it, and reported.
func (c *cgroup) remove() error {
	procs, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	left := strings.Fields(string(procs))
	for _, f := range left {
		if pid, err := strconv.Atoi(f); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%v (processes left: %v)", err, left)
	}
	if len(left) > 0 {
		return fmt.Errorf("processes left in the cgroup: %v", left)
	}
	return nil
}

func (c *cgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

func (c *cgroup) write(name string, v string) error {
	return os.WriteFile(filepath.Join(c.dir, name), []byte(v), 0)
}

func (c *cgroup) readInt(name string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// field reads "key N" from a flat keyed file (memory.oom_control, memory.events).
func (c *cgroup) field(name, key string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", name, key)
}

// setLimit sets the memory limit and, where the kernel has it, forbids swap
// for the cgroup (memory.swap.max 0, or memsw equal to the limit).
func (c *cgroup) setLimit(n int64) error {
	if err := c.write(c.info.limitFile(), strconv.FormatInt(n, 10)); err != nil {
		return err
	}
	if c.info.version == 2 {
		if _, err := os.Stat(filepath.Join(c.dir, "memory.swap.max")); err == nil {
			return c.write("memory.swap.max", "0")
		}
		return nil
	}
	if _, err := os.Stat(filepath.Join(c.dir, "memory.memsw.limit_in_bytes")); err == nil {
		return c.write("memory.memsw.limit_in_bytes", strconv.FormatInt(n, 10))
	}
	return nil
}

func (c *cgroup) usage() (int64, error) {
	if c.info.version == 1 {
		return c.readInt("memory.usage_in_bytes")
	}
	return c.readInt("memory.current")
}

func (c *cgroup) peak() (int64, error) {
	if c.info.version == 1 {
		return c.readInt("memory.max_usage_in_bytes")
	}
	return c.readInt("memory.peak")
}

// oomKills is the number of processes the OOM killer killed in the cgroup.
func (c *cgroup) oomKills() (int64, error) {
	if c.info.version == 1 {
		return c.field("memory.oom_control", "oom_kill")
	}
	return c.field("memory.events", "oom_kill")
}

// limitHits is how often usage hit the limit (v1: memory and memory+swap).
func (c *cgroup) limitHits() (int64, error) {
	if c.info.version == 1 {
		n, err := c.readInt("memory.failcnt")
		if sw, serr := c.readInt("memory.memsw.failcnt"); serr == nil {
			n += sw
		}
		return n, err
	}
	return c.field("memory.events", "max")
}
