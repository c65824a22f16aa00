package verifier

import (
	"runtime"
	"testing"

	"github.com/privacycut/privacycut/internal/bigbuf"
)

// TestNewBufferMapsOnlyLargeBuffers checks where newBuffer's memory comes
// from: below mapFrom the Go heap (a warm plugin reuses its pages), from
// mapFrom on a mapping of its own, freed by the function returned.
func TestNewBufferMapsOnlyLargeBuffers(t *testing.T) {
	before := bigbuf.Live()
	small, freeSmall := newBuffer(mapFrom - 1)
	if len(small) != mapFrom-1 || bigbuf.Live() != before {
		t.Fatalf("a buffer below mapFrom: len %d, %d mapped (want %d)", len(small), bigbuf.Live(), before)
	}
	freeSmall()
	large, freeLarge := newBuffer(mapFrom)
	if len(large) != mapFrom {
		t.Fatalf("len %d", len(large))
	}
	if runtime.GOOS == "linux" && bigbuf.Live() != before+1 {
		t.Fatalf("a buffer of mapFrom bytes: %d mapped, want %d", bigbuf.Live(), before+1)
	}
	freeLarge()
	if bigbuf.Live() != before {
		t.Fatalf("%d mapped after free, want %d", bigbuf.Live(), before)
	}
}
