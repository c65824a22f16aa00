package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// FuzzDecodeLease: the client's decodeLease never panics. It accepts only
// a lease passing lease.Check; a refusal is a *vaultapi.Error whose text is
// one of two fixed texts (ErrInternal for a record that does not decode,
// LEASE_UNRECOVERABLE for a lease that fails Check), so no byte of the
// record reaches the caller. (A refusal may come with the partly decoded
// lease; every caller drops it.) An accepted lease, written as the server
// writes it (encoding/json), decodes back to itself and re-encodes to the same
// bytes.
func FuzzDecodeLease(f *testing.F) {
	const canary = "CANARY-5e8a-ledger"
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	l, err := lease.New(lease.Params{ID: lease.FormatID([16]byte{4, 5, 6}), Run: "run-1", Attempt: 1, Target: "https://model.example/v1",
		Purpose: "triage", Namespace: "abcdefghij", SourceDigest: "hmac-sha256:" + strings.Repeat("1", 64), KeyEpoch: 1,
		Station: "station-a", Principal: "uid:0", Lifetime: time.Hour}, at, 2*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	golden, err := os.ReadFile("../../lease/testdata/lease.golden.json")
	if err != nil {
		f.Fatal(err)
	}
	rec, err := json.Marshal(l)
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range [][]byte{rec, golden} {
		f.Add(r)
		f.Add(bytes.Replace(r, []byte(`"schema":`), []byte(`"`+canary+`":1,"schema":`), 1))
		f.Add(bytes.Replace(r, []byte(`"schema":"PseudonymMapLease@1"`), []byte(`"schema":"`+canary+`"`), 1))
		f.Add(bytes.Replace(r, []byte(`"run-7"`), []byte(`"`+canary+` x"`), 1))
		f.Add(append(bytes.Clone(r), canary...))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`"` + canary + `"`))
	f.Fuzz(func(t *testing.T, rec []byte) {
		l, err := decodeLease("claim", rec)
		if err != nil {
			var e *vaultapi.Error
			if !errors.As(err, &e) {
				t.Fatalf("refusal %T: %v", err, err)
			}
			if msg := err.Error(); msg != "vault: claim: "+vaultapi.ErrInternal.Error() && msg != "vault: claim: "+string(receipts.LeaseUnrecoverable) {
				t.Fatalf("refusal text %q", msg)
			}
			return
		}
		if err := l.Check(); err != nil {
			t.Fatalf("accepted a lease that fails Check: %v", err)
		}
		enc, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("accepted lease does not encode: %v", err)
		}
		l2, err := decodeLease("claim", enc)
		if err != nil {
			t.Fatalf("re-encoded lease refused: %v\n%s", err, enc)
		}
		if diff := cmp.Diff(l, l2); diff != "" {
			t.Fatalf("lease changed through leaseJSON (-decoded +re-decoded):\n%s", diff)
		}
		if enc2, err := json.Marshal(l2); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %s, then %s (%v)", enc, enc2, err)
		}
	})
}

// FuzzDecodeProfile: decodeProfile never panics; it refuses with a zero
// profile or accepts a VaultProfile@1, which, written as the server writes
// it (json.Marshal), decodes back to itself and re-encodes to the same
// bytes. Its errors are not asserted content-free: the encoding/json
// fallback (for a core limit of 2^64-1) can name an unknown field of the
// document, and Status, its only caller, replaces any of them by
// ErrInternal.
func FuzzDecodeProfile(f *testing.F) {
	for _, name := range []string{"profile-accepted.json", "profile-not-proven.json"} {
		b, err := os.ReadFile("../harden/testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	good := `{"schema":"VaultProfile@1","profile":"not_proven","arena":{"kind":"none","bytes":0,"locked":false},` +
		`"dumpable":true,"core_limit":18446744073709551615,"traceback":"","swap":"none","reasons":["core_limit"],"items":[],"pid":7}`
	f.Add([]byte(good))
	f.Add([]byte(strings.Replace(good, `"pid":7`, `"pid":7,"extra":1`, 1)))
	f.Add([]byte(strings.Replace(good, `"schema"`, `"Schema"`, 1)))
	f.Add([]byte(strings.Replace(good, `"pid":7`, `"pid":7,"pid":8`, 1)))
	f.Add([]byte(strings.Replace(good, `"traceback":""`, "\"traceback\":\"\xff\"", 1)))
	f.Add([]byte(good + `{}`))
	f.Add([]byte(`{"schema":"Other@1"}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeProfile(b)
		if err != nil {
			if !reflect.DeepEqual(p, harden.Profile{}) {
				t.Fatalf("refusal with a profile: %+v", p)
			}
			return
		}
		if p.Schema != harden.Schema {
			t.Fatalf("accepted schema %q", p.Schema)
		}
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("accepted profile does not encode: %v", err)
		}
		p2, err := decodeProfile(enc)
		if err != nil {
			t.Fatalf("re-encoded profile refused: %v\n%s", err, enc)
		}
		if diff := cmp.Diff(p, p2); diff != "" {
			t.Fatalf("profile changed through json.Marshal (-decoded +re-decoded):\n%s", diff)
		}
		if enc2, err := json.Marshal(p2); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %s, then %s (%v)", enc, enc2, err)
		}
	})
}
