package harden

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// maxProcFile bounds how much of a /proc file the parsers read (64 MiB: a Go
// process's smaps is a few hundred KiB).
const maxProcFile = 64 << 20

// mapping is one /proc/<pid>/smaps entry: the header line and its VmFlags.
type mapping struct {
	Start, End uintptr
	Perms      string   // e.g. "rw-s", "---p"
	Path       string   // "" for anonymous memory, "/secretmem (deleted)", "[stack]", …
	Flags      []string // VmFlags, e.g. "rd", "wr", "lo", "dd"
}

func (m mapping) has(flag string) bool { return slices.Contains(m.Flags, flag) }

// parseSmaps reads the entries of an smaps file in file order. A line is
// either an entry header ("start-end perms offset dev inode [path]") or a
// "Key: value" field of the current entry; anything else is an error naming
// the line number. Errors never quote the file.
func parseSmaps(r io.Reader) ([]mapping, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxProcFile))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var out []mapping
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" {
			continue
		}
		if key, val, ok := strings.Cut(text, ":"); ok && isFieldKey(key) {
			if len(out) == 0 {
				return nil, parseError("smaps", line, "field before the first entry")
			}
			if key == "VmFlags" {
				out[len(out)-1].Flags = strings.Fields(val)
			}
			continue
		}
		m, err := parseSmapsHeader(text)
		if err != "" {
			return nil, parseError("smaps", line, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, parseError("smaps", line+1, "read: "+err.Error())
	}
	return out, nil
}

// isFieldKey reports whether s looks like an smaps field name ("Size",
// "Pss_Dirty", "VmFlags"): letters, digits and underscores, no spaces.
func isFieldKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseSmapsHeader parses "7f..-7f.. rw-s 00000000 00:0e 26263   /secretmem (deleted)".
// The path is everything after the inode, leading blanks removed; it may hold
// spaces. It returns a problem description, "" when the line parsed.
func parseSmapsHeader(text string) (mapping, string) {
	rest := text
	var f [5]string
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		f[i], rest = rest[:end], rest[end:]
		if f[i] == "" {
			return mapping{}, "short entry header"
		}
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, "address range without '-'"
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, "bad address range"
	}
	if len(f[1]) != 4 || strings.Trim(f[1], "rwxsp-") != "" {
		return mapping{}, "bad permissions"
	}
	return mapping{
		Start: uintptr(start),
		End:   uintptr(end),
		Perms: f[1],
		Path:  strings.TrimSpace(rest),
	}, ""
}

// parseStatusKB returns the value of a "Name:\t N kB" field of
// /proc/<pid>/status, in bytes.
func parseStatusKB(r io.Reader, name string) (uint64, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxProcFile))
	line := 0
	for sc.Scan() {
		line++
		val, ok := strings.CutPrefix(sc.Text(), name+":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, parseError("status", line, name+" is not 'N kB'")
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n > math.MaxUint64/1024 {
			return 0, parseError("status", line, name+" is not a number of kB")
		}
		return n * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, parseError("status", line+1, "read: "+err.Error())
	}
	return 0, parseError("status", line, "no "+name+" field")
}

// unlimited is how an "unlimited" rlimit reads (RLIM_INFINITY).
const unlimited = math.MaxUint64

// rlimit is one row of /proc/<pid>/limits.
type rlimit struct{ Soft, Hard uint64 }

// parseLimits returns the named row of /proc/<pid>/limits ("Max core file
// size"). Columns are separated by runs of two or more spaces; "unlimited"
// reads as the unlimited constant.
func parseLimits(r io.Reader, name string) (rlimit, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxProcFile))
	line := 0
	for sc.Scan() {
		line++
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || !strings.HasPrefix(rest, "  ") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return rlimit{}, parseError("limits", line, "row without soft and hard limits")
		}
		soft, err1 := parseLimitValue(f[0])
		hard, err2 := parseLimitValue(f[1])
		if err1 != nil || err2 != nil {
			return rlimit{}, parseError("limits", line, "limit is neither a number nor 'unlimited'")
		}
		return rlimit{soft, hard}, nil
	}
	if err := sc.Err(); err != nil {
		return rlimit{}, parseError("limits", line+1, "read: "+err.Error())
	}
	return rlimit{}, parseError("limits", line, "no '"+name+"' row")
}

func parseLimitValue(s string) (uint64, error) {
	if s == "unlimited" {
		return unlimited, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseSwaps reports whether /proc/swaps lists any swap area (zram
// included). The first line must be the column header.
func parseSwaps(r io.Reader) (bool, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxProcFile))
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return false, parseError("swaps", 1, "read: "+err.Error())
		}
		return false, parseError("swaps", 1, "empty file")
	}
	if !strings.HasPrefix(sc.Text(), "Filename") {
		return false, parseError("swaps", 1, "no column header")
	}
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, parseError("swaps", 2, "read: "+err.Error())
	}
	return false, nil
}
