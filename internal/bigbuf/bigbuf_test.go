package bigbuf

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// mapped reports whether the address range of b is a mapping of this
// process, from /proc/self/maps.
func mapped(t *testing.T, b []byte) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var a, z uintptr
		if _, err := fmt.Sscanf(strings.Fields(sc.Text())[0], "%x-%x", &a, &z); err != nil {
			t.Fatal(err)
		}
		if a <= lo && hi <= z {
			return true
		}
	}
	return false
}

func TestNew(t *testing.T) {
	small, freeSmall := New(Threshold - 1)
	if len(small) != Threshold-1 {
		t.Fatalf("len %d", len(small))
	}
	freeSmall()

	before := Live()
	b, free := New(8 << 20)
	if len(b) != 8<<20 || cap(b) != 8<<20 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d is %#x, want zero", i, c)
		}
	}
	b[0], b[len(b)-1] = 1, 2 // writable end to end
	if runtime.GOOS == "linux" {
		if Live() != before+1 {
			t.Fatalf("Live %d, want %d", Live(), before+1)
		}
		if !mapped(t, b) {
			t.Fatal("a large buffer is not a mapping of its own")
		}
	}
	free()
	free() // idempotent: a second call must not unmap what took the range since
	if Live() != before {
		t.Fatalf("Live %d after free, want %d", Live(), before)
	}
	if runtime.GOOS == "linux" && mapped(t, b) {
		t.Fatal("the buffer is still mapped after free")
	}
}
