// Package vaulttest holds helpers for the vault's tests: it reads key
// material from a key directory by its documented format (independently of
// package keys), scans bytes and files for secrets, and runs vaultd
// binaries as test daemons (Daemon: build, start, signal, crash, restart,
// logs, and an exec helper for uid, rlimit and cgroup changes). Only tests
// import it.
//
// # Security properties
//
// It exists to expose keys to tests and must never be imported by vaultd,
// cut or any package they build; a test in cmd/vaultd checks that the
// daemon does not depend on it. It guarantees nothing itself.
package vaulttest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// Material is the key material of a key directory at one moment.
type Material struct {
	Epoch     uint64
	EpochKeys map[uint64][]byte // every epoch-<n>.key file
	DEKs      map[string][]byte // lease id → data key, unwrapped under the current epoch
	BackupKey []byte            // backup.key, nil when absent
}

// All returns every key: epoch keys, data keys and the backup key.
func (m Material) All() [][]byte {
	var out [][]byte
	if len(m.BackupKey) > 0 {
		out = append(out, m.BackupKey)
	}
	for _, k := range m.EpochKeys {
		out = append(out, k)
	}
	for _, k := range m.DEKs {
		out = append(out, k)
	}
	return out
}

// ReadMaterial reads a key directory's current epoch, its epoch keys, and
// unwraps every wrapped data key of the current epoch with the documented
// format: XChaCha20-Poly1305, nonce ‖ ciphertext, associated data
// "privacycut/dek/v1" ‖ lease id ‖ epoch (8 bytes, big-endian).
func ReadMaterial(keyDir string) (Material, error) {
	m := Material{EpochKeys: map[uint64][]byte{}, DEKs: map[string][]byte{}}
	cur, err := os.ReadFile(filepath.Join(keyDir, "current"))
	if err != nil {
		return m, err
	}
	m.Epoch, err = strconv.ParseUint(strings.TrimSpace(string(cur)), 10, 64)
	if err != nil {
		return m, fmt.Errorf("current: %w", err)
	}
	ents, err := os.ReadDir(keyDir)
	if err != nil {
		return m, err
	}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "epoch-")
		if !ok {
			continue
		}
		n, ok = strings.CutSuffix(n, ".key")
		if !ok {
			continue
		}
		ep, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			continue
		}
		if m.EpochKeys[ep], err = os.ReadFile(filepath.Join(keyDir, e.Name())); err != nil {
			return m, err
		}
	}
	if b, err := os.ReadFile(filepath.Join(keyDir, "backup.key")); err == nil {
		m.BackupKey = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return m, err
	}
	kek := m.EpochKeys[m.Epoch]
	if len(kek) != 32 {
		return m, fmt.Errorf("epoch key %d missing or malformed", m.Epoch)
	}
	aead, err := chacha20poly1305.NewX(kek)
	if err != nil {
		return m, err
	}
	wraps, err := os.ReadDir(filepath.Join(keyDir, "dek"))
	if err != nil {
		return m, err
	}
	suffix := "." + strconv.FormatUint(m.Epoch, 10)
	for _, w := range wraps {
		base, ok := strings.CutSuffix(w.Name(), suffix)
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(keyDir, "dek", w.Name()))
		if err != nil {
			return m, err
		}
		id := "pcl:" + base
		aad := binary.BigEndian.AppendUint64(append([]byte("privacycut/dek/v1"), id...), m.Epoch)
		if len(b) < aead.NonceSize() {
			return m, fmt.Errorf("wrap of %s too short", id)
		}
		k, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], aad)
		if err != nil {
			return m, fmt.Errorf("wrap of %s: %w", id, err)
		}
		m.DEKs[id] = k
	}
	return m, nil
}

// Forms returns a needle in the forms a leak would take: raw, lower and
// upper hex, standard and URL base64, and Go's traceback notation of a
// by-value byte array ("0x56, 0x41, …", first 8 bytes).
func Forms(needle []byte) [][]byte {
	h := hex.EncodeToString(needle)
	var tb strings.Builder
	for i, c := range needle[:min(8, len(needle))] {
		if i > 0 {
			tb.WriteString(", ")
		}
		fmt.Fprintf(&tb, "%#x", c)
	}
	return [][]byte{
		needle,
		[]byte(h),
		[]byte(strings.ToUpper(h)),
		[]byte(base64.StdEncoding.EncodeToString(needle)),
		[]byte(base64.RawURLEncoding.EncodeToString(needle)),
		[]byte(tb.String()),
	}
}

// Find reports which needles (in any of their Forms) occur in data, by
// index.
func Find(data []byte, needles [][]byte) []int {
	var hits []int
	for i, n := range needles {
		for _, f := range Forms(n) {
			if len(f) > 0 && bytes.Contains(data, f) {
				hits = append(hits, i)
				break
			}
		}
	}
	return hits
}

// FindRaw reports which needles occur raw in data, by index.
func FindRaw(data []byte, needles [][]byte) []int {
	var hits []int
	for i, n := range needles {
		if len(n) > 0 && bytes.Contains(data, n) {
			hits = append(hits, i)
		}
	}
	return hits
}

// ScanDir reads every regular file under dir and returns "path: needle i"
// for each raw needle found.
func ScanDir(dir string, needles [][]byte) ([]string, error) {
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, i := range FindRaw(b, needles) {
			hits = append(hits, fmt.Sprintf("%s: needle %d", p, i))
		}
		return nil
	})
	return hits, err
}

// Files returns the contents of every regular file under dir.
func Files(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = b
		return err
	})
	return out, err
}

// Resign replaces the trailer of a backup stream with the HMAC-SHA256 of
// the rest under backupKey, by the documented format: what someone holding
// the key directory could do after editing a backup.
func Resign(backup, backupKey []byte) []byte {
	if len(backup) < sha256.Size {
		return bytes.Clone(backup)
	}
	body := backup[:len(backup)-sha256.Size]
	m := hmac.New(sha256.New, backupKey)
	m.Write(body)
	return m.Sum(bytes.Clone(body))
}

// Resum replaces the trailer of a backup stream with the plain SHA-256 of
// the rest: the forgery that sufficed when the trailer was unkeyed.
func Resum(backup []byte) []byte {
	if len(backup) < sha256.Size {
		return bytes.Clone(backup)
	}
	body := backup[:len(backup)-sha256.Size]
	sum := sha256.Sum256(body)
	return append(bytes.Clone(body), sum[:]...)
}

// Export returns an Export@1 document holding each token in an owner slot
// of its own category, one ask record per token, in the order given (the
// order a censor puts first appearances in): the smallest export the
// vault's Bind accepts for a lease that issued exactly these tokens.
func Export(tokens []string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"parts":[{"kind":"block","text":"`)
	for _, t := range tokens {
		cat := "module"
		if f := strings.Split(t, ":"); len(f) == 4 {
			cat = f[2]
		}
		b.WriteString(`ask triage.rank-by-severity owner.` + cat + `=\"` + t + `\"\n`)
	}
	b.WriteString(`"}],"profile":"closed-diagnostic@1"}`)
	return b.Bytes()
}
