package readall

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestRead(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 9000) // 144,000 bytes
	for _, tc := range []struct {
		name     string
		declared int64
	}{
		{"exact", int64(len(body))},
		{"unknown", -1},
		{"zero", 0},
		{"short", 100},
		{"long", int64(len(body)) * 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(body), iotest.OneByteReader(strings.NewReader(body)), iotest.HalfReader(strings.NewReader(body))} {
				got, err := Read(r, tc.declared)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != body {
					t.Fatalf("read %d bytes, want the %d of the body", len(got), len(body))
				}
			}
		})
	}
	// A length beyond MaxUpfront sizes the first buffer at MaxUpfront only.
	big := strings.Repeat("z", MaxUpfront+10)
	got, err := Read(strings.NewReader(big), 1<<40)
	if err != nil || string(got) != big {
		t.Fatalf("a body over MaxUpfront: %d bytes, %v", len(got), err)
	}
	got, err = Read(strings.NewReader(""), -1)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty stream: %q, %v", got, err)
	}
}

// TestReadUpfrontBound: a declared length far beyond what arrives
// allocates at most MaxUpfront before the bytes do.
func TestReadUpfrontBound(t *testing.T) {
	got, err := Read(strings.NewReader("short"), 1<<40)
	if err != nil || string(got) != "short" {
		t.Fatalf("got %q, %v", got, err)
	}
	if cap(got) > MaxUpfront+1 {
		t.Fatalf("a declared 1 TiB took a buffer of %d bytes, over MaxUpfront", cap(got))
	}
	got, _ = Read(strings.NewReader("short"), 3)
	if string(got) != "short" {
		t.Fatalf("a length declared short: got %q", got)
	}
}

// TestReadError: a reader's error is returned with what was read before it.
func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))
	got, err := Read(r, 3)
	if !errors.Is(err, boom) || string(got) != "abc" {
		t.Fatalf("got %q, %v; want \"abc\", boom", got, err)
	}
}

// TestReadAllocatesOnce: with the length declared right, the body costs
// one allocation, where io.ReadAll grows through a dozen.
func TestReadAllocatesOnce(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 140_000)
	br := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		br.Reset(body)
		if _, err := Read(br, int64(len(body))); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Fatalf("%v allocations reading a body of the declared length, want 1", allocs)
	}
	unknown := testing.AllocsPerRun(20, func() {
		br.Reset(body)
		if _, err := Read(br, -1); err != nil {
			t.Fatal(err)
		}
	})
	if unknown <= 1 {
		t.Fatalf("%v allocations without a declared length: the test reader no longer makes it grow", unknown)
	}
}

func BenchmarkRead(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 140_000)
	b.Run("declared", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			Read(bytes.NewReader(body), int64(len(body)))
		}
	})
	b.Run("io.ReadAll", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			io.ReadAll(bytes.NewReader(body))
		}
	})
}
