package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writes from many goroutines, read while they run
// (under -race), all arrive whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 || len(b.Bytes()) != 800*5 {
		t.Fatalf("%d lines, %d bytes; want 800, 4000", got, len(b.Bytes()))
	}
}
