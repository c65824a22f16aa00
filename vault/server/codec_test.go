package server

import (
	"bytes"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"google.golang.org/grpc/mem"
)

// countingPool is rpc.Pool, counting the buffers of at least min bytes
// handed out.
type countingPool struct {
	mem.BufferPool
	min int

	mu  sync.Mutex
	big int
}

func (p *countingPool) Get(n int) *[]byte {
	if n >= p.min {
		p.mu.Lock()
		p.big++
		p.mu.Unlock()
	}
	return p.BufferPool.Get(n)
}

// TestCodecOnTheSocket: the client marshals a large request into a buffer
// of rpc.Pool and the server gathers it into another (rpc.Codec on both
// ends), whatever it then makes of the request.
func TestCodecOnTheSocket(t *testing.T) {
	export := bytes.Repeat([]byte("x"), 130<<10)
	// Set before the server and client start, and put back after they
	// stop (cleanups run last first): no goroutine of theirs reads
	// rpc.Pool while it changes.
	p := &countingPool{BufferPool: rpc.Pool, min: len(export)}
	rpc.Pool = p
	t.Cleanup(func() { rpc.Pool = p.BufferPool })
	f := start(t, Options{})
	// Refused (no such lease): what matters is how it crossed.
	if err := f.c.Bind(ctx, "pcl:aaaaaaaaaaaaaaaaaaaaaaaaaa", "evt:seal", hexDigest("hmac-sha256:"), receipts.SHA256(export), export); err == nil {
		t.Fatal("bind of an unknown lease accepted")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.big < 2 {
		t.Fatalf("%d buffers of rpc.Pool held the %d-byte request, want one on each end", p.big, len(export))
	}
}
