package verifier

import (
	"runtime"
	"testing"

	"github.com/privacycut/privacycut/internal/bigbuf"
)

// TestNewBufferMapsUntilWarm checks where newBuffer's memory comes from:
// in a process that has not verified yet, a buffer of bigbuf.Threshold
// bytes is mapped; once a verification has ended, buffers below mapFrom
// come from the Go heap and larger ones are still mapped.
func TestNewBufferMapsUntilWarm(t *testing.T) {
	was := warm.Load()
	defer warm.Store(was)
	mapping := runtime.GOOS == "linux" // elsewhere bigbuf always takes the heap
	check := func(n int, wantMapped bool) {
		t.Helper()
		before := bigbuf.Live()
		b, free := newBuffer(n)
		if len(b) != n {
			t.Fatalf("len %d, want %d", len(b), n)
		}
		want := int64(0)
		if wantMapped && mapping {
			want = 1
		}
		if got := bigbuf.Live() - before; got != want {
			t.Fatalf("newBuffer(%d) warm=%v: %d mapped, want %d", n, warm.Load(), got, want)
		}
		free()
		if bigbuf.Live() != before {
			t.Fatalf("%d mapped after free, want %d", bigbuf.Live(), before)
		}
	}

	warm.Store(false)
	check(bigbuf.Threshold, true)
	check(mapFrom, true)

	// A verification warms the process.
	req := makeCut(t, []testPart{{"block", "a", "GO-2024-2687 in golang.org/x/net"}}, cutOptions{})
	Verify(req)
	if !warm.Load() {
		t.Fatal("a verification did not mark the process warm")
	}
	check(bigbuf.Threshold, false)
	check(mapFrom-1, false)
	check(mapFrom, true)
}
