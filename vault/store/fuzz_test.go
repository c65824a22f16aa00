package store

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

// FuzzReadBackup: the backup reader never panics; it accepts a stream only
// when its trailer is the HMAC of everything before it under the reading
// key and it names that key's id; every stream it accepts holds only
// leases that pass lease.Check and maps of those leases, and the same
// stream with any one byte changed is refused. When sign is set the
// fuzzer's bytes are the stream without its trailer and the trailer is
// computed for them, so that the record parser behind the check is
// explored too.
func FuzzReadBackup(f *testing.F) {
	s, err := Open(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	l, _ := lease.New(lease.Params{ID: lease.FormatID([16]byte{1}), Run: "r", Attempt: 1, Target: "https://t", Purpose: "p",
		Namespace: "abcdefghij", SourceDigest: "hmac-sha256:" + string(bytes.Repeat([]byte("1"), 64)), KeyEpoch: 1,
		Station: "s", Principal: "uid:0", Lifetime: time.Hour}, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour)
	if err := s.Create(l, []byte("ciphertext")); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Backup(&buf, testMAC(1)); err != nil {
		f.Fatal(err)
	}
	s.Close()
	good := buf.Bytes()
	f.Add(good, false)
	f.Add(good[:len(good)-macSize], true)
	m1 := testMAC(1)
	f.Add(append([]byte(backupMagic), m1.KeyID[:]...), true)
	f.Add([]byte(backupMagicV1), false)
	for _, v := range readVectors(f) {
		f.Add(v.stream, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, sign bool) {
		mac := testMAC(1)
		if sign {
			mac.Hash.Reset()
			mac.Hash.Write(b)
			b = mac.Hash.Sum(bytes.Clone(b))
		}
		snap, err := ReadBackup(bytes.NewReader(b), mac)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != receipts.MalformedRecord && e.Code != receipts.LimitExceeded || e.Sys != nil {
				t.Fatalf("refusal %#v", err)
			}
			return
		}
		head := len(backupMagic) + KeyIDSize
		if len(b) < head+macSize || !bytes.Equal(b[len(backupMagic):head], mac.KeyID[:]) {
			t.Fatalf("accepted a stream that does not name the key")
		}
		want := hmac.New(sha256.New, testKey(1))
		want.Write(b[:len(b)-macSize])
		if !bytes.Equal(want.Sum(nil), b[len(b)-macSize:]) {
			t.Fatalf("accepted a stream whose trailer is not its HMAC")
		}
		for _, l := range snap.Leases() {
			if err := l.Check(); err != nil {
				t.Errorf("accepted a lease that fails Check: %v", err)
			}
		}
		for id := range snap.maps {
			found := false
			for _, l := range snap.Leases() {
				if k, _ := IDBytes(l.ID); k == id {
					found = true
				}
			}
			if !found {
				t.Errorf("accepted a map without its lease")
			}
		}
		// Malleability: no single changed byte is accepted.
		for _, i := range []int{0, len(backupMagic), head, len(b) / 2, len(b) - macSize - 1, len(b) - 1} {
			if _, err := ReadBackup(bytes.NewReader(flipAt(b, i)), testMAC(1)); err == nil {
				t.Fatalf("accepted the stream with byte %d changed", i)
			}
		}
	})
}

// FuzzDecodeLease: decodeLease never panics. It accepts only a record of at
// most MaxRecord bytes that decodes strictly to a lease passing lease.Check
// and bearing the id asked for, if any; every refusal is the same
// content-free *Error (ErrCorrupt, LEASE_UNRECOVERABLE) and a zero lease.
// An accepted lease re-encodes (encodeLease, the stored form), decodes
// back to itself, and re-encodes to the same bytes.
func FuzzDecodeLease(f *testing.F) {
	const canary = "CANARY-4d2b-ledger"
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	l, err := lease.New(lease.Params{ID: lease.FormatID([16]byte{1, 2, 3}), Run: "run-1", Attempt: 1, Target: "https://model.example/v1",
		Purpose: "triage", Namespace: "abcdefghij", SourceDigest: "hmac-sha256:" + strings.Repeat("1", 64), KeyEpoch: 1,
		Station: "station-a", Principal: "uid:0", Lifetime: time.Hour}, at, 2*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	b, err := l.Bind("evt:seal", "hmac-sha256:"+strings.Repeat("2", 64), "sha256:"+strings.Repeat("3", 64), at.Add(time.Second))
	if err != nil {
		f.Fatal(err)
	}
	tup := lease.ClaimTuple{Principal: "uid:0", Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: "sha256:" + strings.Repeat("a", 64)}
	c, _, err := b.Claim(tup, at.Add(2*time.Second))
	if err != nil {
		f.Fatal(err)
	}
	for _, x := range []lease.Lease{l, b, c} {
		rec, err := encodeLease(x)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rec, "")
		f.Add(rec, x.ID)
		f.Add(rec, lease.FormatID([16]byte{9}))
		f.Add(bytes.Replace(rec, []byte(`"purpose":"triage"`), []byte(`"purpose":"`+canary+`"`), 1), "")
		f.Add(bytes.Replace(rec, []byte(`"run":"run-1"`), []byte(`"run":"`+canary+` x"`), 1), "")
		f.Add(bytes.Replace(rec, []byte(`"seq":`), []byte(`"`+canary+`":1,"seq":`), 1), "")
		f.Add(bytes.Replace(rec, []byte(`"created_at":"2030-01-02T03:04:05Z"`), []byte(`"created_at":"2030-01-02T03:04:05+01:00"`), 1), "")
		f.Add(bytes.Replace(rec, []byte(`"key_epoch":1`), []byte(`"key_epoch":18446744073709551615`), 1), "")
		f.Add(append(bytes.Clone(rec), canary...), "")
	}
	golden, err := os.ReadFile("../../lease/testdata/lease.golden.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden, "")
	f.Add([]byte(`{}`), "")
	f.Add([]byte(`"`+canary+`"`), "")
	f.Add(bytes.Repeat([]byte(" "), MaxRecord+1), "")
	f.Fuzz(func(t *testing.T, rec []byte, id string) {
		l, err := decodeLease("get", rec, id)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Err != ErrCorrupt || e.Code != receipts.LeaseUnrecoverable || e.Sys != nil {
				t.Fatalf("refusal %#v", err)
			}
			if msg := err.Error(); msg != "store: get: stored record is corrupt (LEASE_UNRECOVERABLE)" {
				t.Fatalf("refusal text %q", msg)
			}
			if !reflect.DeepEqual(l, lease.Lease{}) {
				t.Fatalf("refusal with a lease: %+v", l)
			}
			return
		}
		if len(rec) > MaxRecord {
			t.Fatalf("accepted a record of %d bytes", len(rec))
		}
		if err := l.Check(); err != nil {
			t.Fatalf("accepted a lease that fails Check: %v", err)
		}
		if id != "" && l.ID != id {
			t.Fatalf("asked for %q, accepted %q", id, l.ID)
		}
		enc, err := encodeLease(l)
		if err != nil {
			t.Fatalf("accepted lease does not encode: %v", err)
		}
		l2, err := decodeLease("get", enc, l.ID)
		if err != nil {
			t.Fatalf("re-encoded lease refused: %v\n%s", err, enc)
		}
		if diff := cmp.Diff(l, l2); diff != "" {
			t.Fatalf("lease changed through encodeLease (-decoded +re-decoded):\n%s", diff)
		}
		if enc2, err := encodeLease(l2); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %s, then %s (%v)", enc, enc2, err)
		}
	})
}
