package rpc

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// recordingPool is Pool, recording the length asked for and the capacity
// handed out at each Get.
type recordingPool struct {
	mem.BufferPool
	gets [][2]int
}

func (p *recordingPool) Get(n int) *[]byte {
	b := p.BufferPool.Get(n)
	p.gets = append(p.gets, [2]int{n, cap(*b)})
	return b
}

// TestCodec checks that Codec writes the bytes gRPC's protobuf codec
// writes and reads them back, and that a message above gRPC's pooling
// threshold is marshalled into, and gathered into, a buffer of Pool less
// than twice its size: a 130 KB export in a 256 KiB buffer, not 1 MiB.
func TestCodec(t *testing.T) {
	for _, n := range []int{0, 100, 40 << 10, 130 << 10, 600 << 10, 1<<20 + 77} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rec := &recordingPool{BufferPool: Pool}
			Pool = rec
			t.Cleanup(func() { Pool = rec.BufferPool })
			in := &vaultpb.BindRequest{LeaseId: "pcl:aaaaaaaaaaaaaaaaaaaaaaaaaa", CutEvent: "evt:seal", Export: make([]byte, n)}
			rand.Read(in.Export)
			want, err := proto.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			data, err := Codec.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := data.Materialize(); !bytes.Equal(got, want) {
				t.Fatalf("marshalled %d bytes, not the %d proto.Marshal writes", len(got), len(want))
			}
			// Received in 16 KiB pieces, as gRPC's transport reads frames.
			var pieces mem.BufferSlice
			for off := 0; off < len(want); off += 16 << 10 {
				pieces = append(pieces, mem.SliceBuffer(want[off:min(off+16<<10, len(want))]))
			}
			data.Free()
			var out vaultpb.BindRequest
			if err := Codec.Unmarshal(pieces, &out); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(in, &out) {
				t.Fatal("the message read back differs")
			}
			pooled := !mem.IsBelowBufferPoolingThreshold(len(want))
			if pooled && len(rec.gets) == 0 {
				t.Fatalf("a %d-byte message took no buffer of Pool", len(want))
			}
			for _, g := range rec.gets {
				if g[0] < 256 && g[1] > 256 || g[0] >= 256 && g[0] <= 1<<20 && g[1] >= 2*g[0] || g[1] < g[0] {
					t.Errorf("Get(%d) handed out a buffer of capacity %d", g[0], g[1])
				}
			}
		})
	}
}

// TestCodecRefusesOtherTypes: only protobuf messages are encoded.
func TestCodecRefusesOtherTypes(t *testing.T) {
	if _, err := Codec.Marshal("not a message"); err != errNotProto {
		t.Errorf("Marshal: %v, want errNotProto", err)
	}
	var s string
	if err := Codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{1})}, &s); err != errNotProto {
		t.Errorf("Unmarshal: %v, want errNotProto", err)
	}
}

// TestPoolTiers: every length up to 1 MiB gets a buffer of at least that
// length and less than twice it (256 bytes at least); a longer one, up to
// MaxMessage, one of at least its length.
func TestPoolTiers(t *testing.T) {
	for n := 1; n <= MaxMessage; n = n*3/2 + 1 {
		b := Pool.Get(n)
		if len(*b) != n || cap(*b) < n || n <= 1<<20 && cap(*b) >= max(2*n, 257) {
			t.Errorf("Get(%d): length %d, capacity %d", n, len(*b), cap(*b))
		}
		Pool.Put(b)
	}
}
