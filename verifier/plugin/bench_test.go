package plugin

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/privacycut/privacycut/internal/syncbuf"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

// BenchmarkVerify verifies a 64 MiB cut through a running plugin, and
// through one plugin process per verification with the inputs in a sealed
// memfd (what cut prepare does), beside SHA-256 of the same source bytes
// in the same run.
func BenchmarkVerify(b *testing.B) {
	const size = 64 << 20
	text := bigText(size / 4)
	parts := []testPart{{Kind: "block", Key: "a", Text: text}, {Kind: "history", Key: "b", Text: text},
		{Kind: "tool", Key: "c", Text: text}, {Kind: "artifact", Key: "d", Text: text}}
	req := makeCut(b, parts, cutOptions{})
	if v := verifier.Verify(req); v.Verdict != receipts.VerdictPass {
		b.Fatalf("benchmark cut does not verify: %+v", v.Claims)
	}
	b.Run("plugin", func(b *testing.B) {
		var log syncbuf.Buffer
		c, err := startPlugin(b, &log)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			v, err := c.Checker().Verify(context.Background(), req)
			if err != nil || v.Verdict != receipts.VerdictPass {
				b.Fatal(err, v.Verdict)
			}
		}
	})
	b.Run("plugin-attached", func(b *testing.B) {
		exe := selfExe(b)
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			v, err := Run(context.Background(), exe, []string{Arg}, nil, nil, req)
			if err != nil || v.Verdict != receipts.VerdictPass {
				b.Fatal(err, v.Verdict)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			sha256.Sum256(req.Source)
		}
	})
}
