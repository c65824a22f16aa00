package rpc

import (
	"errors"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Codec is the protobuf codec of the vault's gRPC server and client
// (grpc.ForceServerCodecV2, grpc.ForceCodecV2). It encodes as gRPC's own
// codec does, but marshals into, and gathers a received message into,
// buffers of Pool rather than of gRPC's default pool. That pool has no tier
// between 32 KiB and 1 MiB and clears a buffer's whole capacity each time
// it hands it out, so that an export bound or an answer rehydrated of 100
// KB would clear 1 MiB on each side of the socket. grpc-go marks
// ForceCodecV2 experimental: TestCodecOnTheSocket (package vault/server)
// fails if an upgrade stops either end from using Codec.
var Codec encoding.CodecV2 = codec{}

// Pool holds the buffers of Codec: a tier for each power of two from 256
// bytes to 1 MiB, so that a message of up to 1 MiB gets a buffer less than
// twice its size; a larger one (a Rehydrate piece with its framing, a
// grant of a large map) gets one of its own size, as from gRPC's pool. A
// buffer is cleared when it is handed out, as in gRPC's pool.
var Pool mem.BufferPool = newPool()

func newPool() mem.BufferPool {
	var exps []uint8
	for e := uint8(8); e <= 20; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		panic("rpc: buffer pool: " + err.Error())
	}
	return p
}

type codec struct{}

var errNotProto = errors.New("rpc: codec: not a protobuf message")

// Name is gRPC's name of the protobuf codec: both ends read it as the
// usual content-subtype.
func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, errNotProto
	}
	size := proto.Size(m)
	// UseCachedSize reuses the size just computed; the message is not
	// changed meanwhile.
	opt := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opt.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := Pool.Get(size)
	b, err := opt.MarshalAppend((*buf)[:0], m)
	if err != nil {
		Pool.Put(buf)
		return nil, err
	}
	if len(b) != size || &b[0] != &(*buf)[0] {
		// Not the size just computed: what was written is sent, and its
		// buffer is left to the collector rather than pooled under it.
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return mem.BufferSlice{mem.NewBuffer(buf, Pool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return errNotProto
	}
	// proto.Unmarshal copies what it keeps: the buffer goes back to the
	// pool once it returns.
	buf := data.MaterializeToBuffer(Pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
