package rehydrate

import (
	"strings"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// Retention profiles and their maximum retention of a rehydrated result.
const (
	RetentionNone    = receipts.RetentionNone    // at most 1 hour
	RetentionSession = receipts.RetentionSession // at most 24 hours
	RetentionShort   = receipts.RetentionShort   // at most 7 days
)

// RetentionMax returns the longest time a rehydrated result may be kept
// under the retention profile (the plan's "retention"): no-retention 1 h,
// session 24 h, short 7 days. Any other name is ErrUnknownRetention: a
// profile nobody defined bounds nothing.
func RetentionMax(profile string) (time.Duration, error) {
	switch profile {
	case RetentionNone:
		return time.Hour, nil
	case RetentionSession:
		return 24 * time.Hour, nil
	case RetentionShort:
		return 7 * 24 * time.Hour, nil
	}
	return 0, ErrUnknownRetention
}

// ReceiptInput is what a RehydrationReceipt@1 binds besides the Result.
type ReceiptInput struct {
	CutEvent         string // the seal's event id
	Lease            string // the lease reference, "pcl:" and 26 characters of [a-z2-7]
	Result           Result // only its digests and counts are used, never Output
	VerifierRevision string
	PolicyRevision   string
	LabelDigest      string    // the restored (source) label's keyed digest, "hmac-sha256:…"
	SourceExpiry     time.Time // when the source material expires
	CutExpiry        time.Time // the plan's expires_at
	Retention        string    // the plan's retention profile
	Now              time.Time // time of rehydration
	// OutputSchemaDigest is the digest of the schema used (Schema.Digest),
	// "sha256:…": the plan's output_schema_digest.
	OutputSchemaDigest string

	// EvidenceKey, when set, makes final_digest the keyed digest
	// (hmac-sha256) of Result.Output instead of Result.FinalDigest, so that
	// the receipt cannot confirm a guess of a restored value (see Security
	// properties). It must not have been wiped.
	EvidenceKey *receipts.EvidenceKey
}

// NewReceipt returns the RehydrationReceipt@1 of a rehydration:
//
//	purge_at = min(SourceExpiry, CutExpiry, Now + RetentionMax(Retention))
//
// Times are RFC 3339 in UTC. The receipt holds digests, revisions, counts
// per category, identifiers and times: no value and no token. Every field is
// checked, so that nothing else can be smuggled into it: a malformed field
// is ErrReceiptInput, an unknown retention profile ErrUnknownRetention, and
// a purge time not after Now is ErrPurgeElapsed (the result must not be
// released).
func NewReceipt(in ReceiptInput) (receipts.RehydrationReceipt, error) {
	var zero receipts.RehydrationReceipt
	keep, err := RetentionMax(in.Retention)
	if err != nil {
		return zero, err
	}
	switch {
	case !validIdent(in.CutEvent),
		!validLeaseRef(in.Lease),
		!validIdent(in.VerifierRevision), !validIdent(in.PolicyRevision),
		!isDigest(in.LabelDigest, receipts.PrefixHMAC),
		!isDigest(in.Result.ReturnDigest, receipts.PrefixSHA256),
		!isDigest(in.Result.FinalDigest, receipts.PrefixSHA256),
		!isDigest(in.OutputSchemaDigest, receipts.PrefixSHA256),
		in.SourceExpiry.IsZero(), in.CutExpiry.IsZero(), in.Now.IsZero():
		return zero, ErrReceiptInput
	}
	subs := make(map[string]int, len(in.Result.Substitutions))
	for c, n := range in.Result.Substitutions {
		if ci := categoryIndex([]byte(c)); ci < 0 || c == credential || n < 0 {
			return zero, ErrReceiptInput
		}
		if n > 0 {
			subs[c] = n
		}
	}
	final := in.Result.FinalDigest
	if in.EvidenceKey != nil {
		if in.Result.Output == nil {
			return zero, ErrReceiptInput
		}
		if in.Result.keyedWith == in.EvidenceKey && in.Result.keyed != "" {
			// ApplyKeyed computed it under this key, from the bytes it
			// wrote, beside the plain digest.
			final = in.Result.keyed
		} else {
			// The plain digest is checked on another CPU while the keyed
			// one is computed; a mismatch discards both.
			plain := make(chan string, 1)
			go func() { plain <- receipts.SHA256(in.Result.Output) }()
			final = in.EvidenceKey.HMAC(in.Result.Output)
			if <-plain != in.Result.FinalDigest {
				return zero, ErrReceiptInput
			}
		}
	}
	purge := in.Now.Add(keep)
	purge = minTime(purge, in.SourceExpiry)
	purge = minTime(purge, in.CutExpiry)
	if !purge.After(in.Now) {
		return zero, ErrPurgeElapsed
	}
	return receipts.RehydrationReceipt{
		Schema:             receipts.SchemaRehydration,
		CutEvent:           in.CutEvent,
		Lease:              in.Lease,
		ReturnDigest:       in.Result.ReturnDigest,
		FinalDigest:        final,
		Substitutions:      subs,
		VerifierRevision:   in.VerifierRevision,
		PolicyRevision:     in.PolicyRevision,
		LabelDigest:        in.LabelDigest,
		PurgeAt:            purge.UTC().Format(time.RFC3339Nano),
		RehydratedAt:       in.Now.UTC().Format(time.RFC3339Nano),
		OutputSchemaDigest: in.OutputSchemaDigest,
	}, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// validIdent accepts 1 to 128 bytes of [A-Za-z0-9._:/@+-] not containing
// "pcv:": event ids and revisions are identifiers, never text or tokens.
func validIdent(s string) bool {
	if len(s) == 0 || len(s) > 128 || strings.Contains(s, tokenPrefix) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// validLeaseRef accepts "pcl:" and 26 characters of [a-z2-7].
func validLeaseRef(s string) bool {
	return len(s) == 4+26 && s[:4] == "pcl:" && allB32([]byte(s[4:]))
}

func isDigest(s, prefix string) bool {
	alg, _, err := receipts.ParseDigest(s)
	return err == nil && alg == prefix
}
