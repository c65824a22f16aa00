package tests

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/vault/vaulttest"
)

// formNames name the forms of vaulttest.Forms, in its order.
var formNames = []string{"raw", "hex", "HEX", "base64", "base64url", "traceback-bytes"}

// scanner looks for canaries in every form a leak would take: raw, hex,
// base64 and Go's traceback notation of a by-value byte array.
type scanner struct {
	needles [][]byte
	forms   [][][]byte // per needle, vaulttest.Forms
	maxLen  int
}

func newScanner(needles [][]byte) *scanner {
	s := &scanner{needles: needles}
	for _, n := range needles {
		fs := vaulttest.Forms(n)
		s.forms = append(s.forms, fs)
		for _, f := range fs {
			s.maxLen = max(s.maxLen, len(f))
		}
	}
	return s
}

// hit is one canary found: which, in what form, where.
type hit struct {
	needle int
	form   string
	where  string // file path, core segment or memory mapping
	offset int64  // within where
}

func (h hit) String() string {
	return fmt.Sprintf("canary %d (%s) in %s at offset %#x", h.needle, h.form, h.where, h.offset)
}

// find returns the first occurrence of each needle in each form in data,
// offsets relative to base.
func (s *scanner) find(data []byte, where string, base int64) []hit {
	var hits []hit
	for i, fs := range s.forms {
		for j, f := range fs {
			if len(f) == 0 {
				continue
			}
			if k := bytes.Index(data, f); k >= 0 {
				hits = append(hits, hit{needle: i, form: formNames[j], where: where, offset: base + int64(k)})
			}
		}
	}
	return hits
}

// scanReader scans r in chunks that overlap by the longest form, so that
// nothing straddling a chunk boundary is missed. It returns the hits (one
// per needle and form, the first) and the bytes read.
func (s *scanner) scanReader(r io.Reader, where string) ([]hit, int64, error) {
	const chunk = 4 << 20
	buf := make([]byte, 0, chunk+s.maxLen)
	var off, total int64 // off: file offset of buf[0]
	seen := map[[2]int]bool{}
	var hits []hit
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		total += int64(n)
		for _, h := range s.find(buf, where, off) {
			key := [2]int{h.needle, indexOf(formNames, h.form)}
			if !seen[key] {
				seen[key] = true
				hits = append(hits, h)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return hits, total, nil
		}
		if err != nil {
			return hits, total, err
		}
		keep := min(len(buf), s.maxLen-1)
		off += int64(len(buf) - keep)
		copy(buf, buf[len(buf)-keep:])
		buf = buf[:keep]
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// treeReport is the scan of every byte under some directories.
type treeReport struct {
	files, bytes int64
	hits         []hit // outside the allowed files
	allowedHits  []hit // inside them
}

// scanTrees scans every regular file under roots. Files in allowed may
// hold canaries (the rehydrated result the user asked for); their hits are
// reported apart. Sockets and other special files hold no bytes.
func (s *scanner) scanTrees(roots []string, allowed map[string]bool) (treeReport, error) {
	var rep treeReport
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			hits, n, err := s.scanReader(f, p)
			if err != nil {
				return err
			}
			rep.files++
			rep.bytes += n
			if allowed[p] {
				rep.allowedHits = append(rep.allowedHits, hits...)
			} else {
				rep.hits = append(rep.hits, hits...)
			}
			return nil
		})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// coreReport is the scan of a core file.
type coreReport struct {
	segments, bytes int64
	hits            []hit // where names the PT_LOAD segment's address range and flags
}

// scanCore reads an ELF core file and scans each loaded segment, mapping
// every hit to the program header (and so the address range of the
// process) it came from.
func (s *scanner) scanCore(path string) (coreReport, error) {
	var rep coreReport
	f, err := elf.Open(path)
	if err != nil {
		return rep, err
	}
	defer f.Close()
	if f.Type != elf.ET_CORE {
		return rep, fmt.Errorf("%s is ELF type %v, not a core", path, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Filesz == 0 {
			continue
		}
		where := fmt.Sprintf("segment %#x-%#x %v", p.Vaddr, p.Vaddr+p.Memsz, p.Flags)
		hits, n, err := s.scanReader(p.Open(), where)
		if err != nil {
			return rep, fmt.Errorf("%s: %v", where, err)
		}
		rep.segments++
		rep.bytes += n
		for _, h := range hits {
			h.offset += int64(p.Vaddr) // an address in the process
			rep.hits = append(rep.hits, h)
		}
	}
	return rep, nil
}

// mapping is one entry of /proc/<pid>/smaps.
type mapping struct {
	start, end uint64
	perms      string
	path       string
	flags      map[string]bool
}

func (m mapping) String() string {
	return fmt.Sprintf("%#x-%#x %s %s", m.start, m.end, m.perms, m.path)
}

// readSmaps parses /proc/<pid>/smaps.
func readSmaps(pid int) ([]mapping, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
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
		out = append(out, mapping{start: s, end: e, perms: f[1], path: strings.Join(f[5:], " "), flags: map[string]bool{}})
	}
	return out, nil
}

// memReport is a live scan of a process's memory.
type memReport struct {
	scanned, unreadable int64
	unreadableMaps      []mapping // mappings /proc/<pid>/mem refused (secretmem: EIO)
	hits                []hit
	hitMaps             []mapping // the mapping of each hit
}

// scanMemory reads every readable mapping of pid through /proc/<pid>/mem
// (root: CAP_SYS_PTRACE reads a non-dumpable process) and scans it.
func (s *scanner) scanMemory(pid int) (memReport, error) {
	var rep memReport
	maps, err := readSmaps(pid)
	if err != nil {
		return rep, err
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return rep, err
	}
	defer mem.Close()
	for _, m := range maps {
		if m.perms[0] != 'r' || m.path == "[vsyscall]" || m.path == "[vvar]" || m.path == "[vvar_vclock]" {
			continue
		}
		r := &memReader{f: mem, off: int64(m.start), end: int64(m.end)}
		hits, n, err := s.scanReader(r, m.String())
		rep.scanned += n
		if err != nil || r.refused {
			rep.unreadable += int64(m.end-m.start) - n
			rep.unreadableMaps = append(rep.unreadableMaps, m)
		}
		for _, h := range hits {
			h.offset += int64(m.start)
			rep.hits = append(rep.hits, h)
			rep.hitMaps = append(rep.hitMaps, m)
		}
	}
	return rep, nil
}

// memReader reads [off, end) of /proc/<pid>/mem; a refused read ends it.
type memReader struct {
	f        *os.File
	off, end int64
	refused  bool
}

func (r *memReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.end-r.off)]
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err != nil && n == 0 {
		r.refused = true
		return 0, io.EOF
	}
	return n, nil
}

// hitsSummary formats hits for a failure message, sorted.
func hitsSummary(hits []hit) string {
	var s []string
	for _, h := range hits {
		s = append(s, h.String())
	}
	sort.Strings(s)
	return strings.Join(s, "\n\t")
}
