package store

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

var update = flag.Bool("update", false, "rewrite the backup vectors in testdata/backup")

// testKey is a fixed backup key for tests and vectors.
func testKey(n byte) []byte { return bytes.Repeat([]byte{n}, 32) }

// testMAC is the MAC of testKey(n), its id made as the key directory makes
// a backup key's id.
func testMAC(n byte) MAC {
	k := testKey(n)
	idm := hmac.New(sha256.New, k)
	idm.Write([]byte("privacycut/backup-key-id/v1"))
	var m MAC
	copy(m.KeyID[:], idm.Sum(nil))
	m.Hash = hmac.New(sha256.New, k)
	return m
}

// The backup vectors: one file per stream, made from the documented
// format alone (never by Backup), each with the outcome ReadBackup must
// give under the key it names.
//
//	# comment
//	expect: ok | ErrBackup | ErrBackupKey | ErrBackupVersion
//	offset: <byte offset of the refusal>   (refusals only)
//	key: <hex of the 32-byte backup key it is read with>
//
//	<hex of the stream, 64 characters a line>
type vector struct {
	name, comment, expect string
	offset                int64
	key                   []byte
	stream                []byte
}

const vectorDir = "testdata/backup"

// vectorLease is the one lease of the vectors: ACTIVE and bound.
func vectorLease() []byte {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	l, err := lease.New(lease.Params{ID: lease.FormatID([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
		Run: "run-1", Attempt: 1, Target: "https://model.example/v1", Purpose: "triage", Namespace: "abcdefghij",
		SourceDigest: "hmac-sha256:" + strings.Repeat("1", 64), KeyEpoch: 1, Station: "station-a", Principal: "uid:1000",
		Lifetime: time.Hour}, at, 2*time.Hour)
	if err != nil {
		panic(err)
	}
	l, err = l.Bind("evt:seal", "hmac-sha256:"+strings.Repeat("2", 64), "sha256:"+strings.Repeat("3", 64), at.Add(time.Second))
	if err != nil {
		panic(err)
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return b
}

// vectorMap stands for a sealed map: the reader never opens it.
var vectorMap = []byte("nonce-and-ciphertext-of-a-map-0123456789abcdef")

// body writes magic, key id, one lease and its map, and the end record.
func vectorBody(magic string, keyID []byte, rec, m []byte) []byte {
	id := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	b := append([]byte(magic), keyID...)
	for _, r := range []struct {
		kind byte
		v    []byte
	}{{'L', rec}, {'M', m}} {
		b = append(b, r.kind)
		b = append(b, id...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.v)))
		b = append(b, r.v...)
	}
	b = append(b, 'E')
	return binary.BigEndian.AppendUint64(b, 2)
}

func hmacOf(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return m.Sum(nil)
}

func shaOf(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// makeVectors builds every vector from the format.
func makeVectors() []vector {
	k1, k2 := testKey(1), testKey(2)
	m1, m2 := testMAC(1), testMAC(2)
	id1, id2 := m1.KeyID[:], m2.KeyID[:]
	rec := vectorLease()
	good := vectorBody(backupMagic, id1, rec, vectorMap)
	edited := bytes.Clone(vectorMap)
	edited[30] ^= 1
	editedBody := vectorBody(backupMagic, id1, rec, edited)
	other := bytes.Replace(rec, []byte(`"principal":"uid:1000"`), []byte(`"principal":"uid:1001"`), 1)
	otherBody := vectorBody(backupMagic, id1, other, vectorMap)
	v1Body := vectorBody(backupMagicV1, nil, rec, edited)
	return []vector{
		{name: "ok", comment: "an intact stream: one ACTIVE lease and its map", expect: "ok", key: k1,
			stream: append(bytes.Clone(good), hmacOf(k1, good)...)},
		{name: "map-edited-sha256", comment: "one byte of the ACTIVE lease's map flipped, the trailer recomputed as the plain SHA-256 of the edited stream",
			expect: "ErrBackup", offset: int64(len(editedBody)), key: k1, stream: append(bytes.Clone(editedBody), shaOf(editedBody)...)},
		{name: "map-edited", comment: "one byte of the ACTIVE lease's map flipped, the trailer kept",
			expect: "ErrBackup", offset: int64(len(editedBody)), key: k1, stream: append(bytes.Clone(editedBody), hmacOf(k1, good)...)},
		{name: "principal-edited-sha256", comment: "the lease record given to another principal, the trailer recomputed as a plain SHA-256",
			expect: "ErrBackup", offset: int64(len(otherBody)), key: k1, stream: append(bytes.Clone(otherBody), shaOf(otherBody)...)},
		{name: "other-key", comment: "an intact stream of another vault's backup key",
			expect: "ErrBackupKey", offset: int64(len(backupMagic)), key: k1,
			stream: func() []byte { b := vectorBody(backupMagic, id2, rec, vectorMap); return append(b, hmacOf(k2, b)...) }()},
		{name: "format-1-edited", comment: "the earlier format, map edited, its SHA-256 trailer recomputed",
			expect: "ErrBackupVersion", offset: 0, key: k1, stream: append(bytes.Clone(v1Body), shaOf(v1Body)...)},
	}
}

func (v vector) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\nexpect: %s\n", v.comment, v.expect)
	if v.expect != "ok" {
		fmt.Fprintf(&b, "offset: %d\n", v.offset)
	}
	fmt.Fprintf(&b, "key: %x\n\n", v.key)
	h := hex.EncodeToString(v.stream)
	for len(h) > 0 {
		n := min(64, len(h))
		b.WriteString(h[:n] + "\n")
		h = h[n:]
	}
	return b.Bytes()
}

func parseVector(name string, data []byte) (vector, error) {
	v := vector{name: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var hx strings.Builder
	header := true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case header && line == "":
			header = false
		case header && strings.HasPrefix(line, "# "):
			v.comment = line[2:]
		case header:
			k, val, ok := strings.Cut(line, ": ")
			if !ok {
				return v, fmt.Errorf("bad header line %q", line)
			}
			var err error
			switch k {
			case "expect":
				v.expect = val
			case "offset":
				v.offset, err = strconv.ParseInt(val, 10, 64)
			case "key":
				v.key, err = hex.DecodeString(val)
			default:
				err = fmt.Errorf("unknown header %q", k)
			}
			if err != nil {
				return v, err
			}
		default:
			hx.WriteString(line)
		}
	}
	var err error
	v.stream, err = hex.DecodeString(hx.String())
	return v, err
}

func readVectors(t testing.TB) []vector {
	t.Helper()
	ents, err := os.ReadDir(vectorDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []vector
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".txt")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(vectorDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		v, err := parseVector(name, b)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out = append(out, v)
	}
	return out
}

// TestBackupVectors reads every vector under its key and checks the outcome
// it names; the vectors on disk are the ones the format gives (-update
// rewrites them).
func TestBackupVectors(t *testing.T) {
	made := makeVectors()
	if *update {
		if err := os.MkdirAll(vectorDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, v := range made {
			if err := os.WriteFile(filepath.Join(vectorDir, v.name+".txt"), v.encode(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := readVectors(t)
	if len(got) != len(made) {
		t.Fatalf("%d vectors on disk, %d made (run with -update)", len(got), len(made))
	}
	sentinels := map[string]error{"ErrBackup": ErrBackup, "ErrBackupKey": ErrBackupKey, "ErrBackupVersion": ErrBackupVersion}
	for _, v := range got {
		t.Run(v.name, func(t *testing.T) {
			for _, m := range made {
				if m.name == v.name && !bytes.Equal(m.encode(), v.encode()) {
					t.Errorf("the vector on disk is not the one the format gives (run with -update)")
				}
			}
			mac := MAC{Hash: hmac.New(sha256.New, v.key)}
			idm := hmac.New(sha256.New, v.key)
			idm.Write([]byte("privacycut/backup-key-id/v1"))
			copy(mac.KeyID[:], idm.Sum(nil))
			snap, err := ReadBackup(bytes.NewReader(v.stream), mac)
			if v.expect == "ok" {
				if err != nil || len(snap.Leases()) != 1 || !snap.HasMap(snap.Leases()[0].ID) {
					t.Fatalf("ReadBackup: %v", err)
				}
				return
			}
			want, ok := sentinels[v.expect]
			if !ok {
				t.Fatalf("unknown expectation %q", v.expect)
			}
			var e *Error
			if !errors.Is(err, want) || !errors.As(err, &e) || e.Code != receipts.MalformedRecord {
				t.Fatalf("ReadBackup: %v, want %v", err, want)
			}
			if e.Offset != v.offset {
				t.Errorf("offset %d, want %d", e.Offset, v.offset)
			}
		})
	}
}
