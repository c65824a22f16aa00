//go:build linux && (amd64 || arm64 || riscv64)

package arena

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// leakForms reports every form in which canary (or an 8-byte window of it)
// appears in out: raw bytes, hex in either case, standard or URL base64 at any
// alignment, and sequences of numbers as fmt's %d/%v/%#v and Go tracebacks
// print bytes ({0x4d, 0x35, …} or [77 53 …]) or words (0x2d59524e41433534).
func leakForms(out, canary []byte) []string {
	var found []string
	add := func(form string, hit bool) {
		if hit {
			found = append(found, form)
		}
	}
	const w = 8
	windows := func(fn func(win []byte) bool) bool {
		for i := 0; i+w <= len(canary); i++ {
			if fn(canary[i : i+w]) {
				return true
			}
		}
		return false
	}
	add("raw", windows(func(win []byte) bool { return bytes.Contains(out, win) }))
	add("hex", windows(func(win []byte) bool {
		return bytes.Contains(bytes.ToLower(out), []byte(hex.EncodeToString(win)))
	}))
	for _, enc := range []struct {
		name string
		e    *base64.Encoding
	}{{"base64", base64.StdEncoding}, {"base64url", base64.URLEncoding}} {
		hit := false
		for r := range 3 {
			s := enc.e.EncodeToString(append(make([]byte, r), canary...))
			from, to := 4*((r+2)/3), 4*((r+len(canary))/3)
			if to-from >= 12 && bytes.Contains(out, []byte(s[from:to])) {
				hit = true
			}
		}
		add(enc.name, hit)
	}
	var asBytes, asWords []byte
	for _, tok := range numberToken.FindAll(out, -1) {
		v, err := strconv.ParseUint(string(tok), 0, 64)
		if err != nil {
			continue
		}
		if v <= 0xff {
			asBytes = append(asBytes, byte(v))
		}
		asWords = binary.LittleEndian.AppendUint64(asWords, v)
	}
	add("byte numbers", windows(func(win []byte) bool { return bytes.Contains(asBytes, win) }))
	add("word numbers", windows(func(win []byte) bool { return bytes.Contains(asWords, win) }))
	return found
}

var numberToken = regexp.MustCompile(`0[xX][0-9a-fA-F]+|[0-9]+`)

// TestLeakFormsDetects is the detector's own positive control: each form of
// the canary must be found, and unrelated text must not be.
func TestLeakFormsDetects(t *testing.T) {
	canary := []byte("CANARY-7d1c2b9e44a0f31c")
	var arr [24]byte
	copy(arr[:], canary)
	tests := []struct {
		name string
		out  string
		want string
	}{
		{"raw", "x " + string(canary[3:15]) + " y", "raw"},
		{"hex", "k=" + hex.EncodeToString(canary), "hex"},
		{"HEX", "k=" + strings.ToUpper(hex.EncodeToString(canary)), "hex"},
		{"base64 offset 1", base64.StdEncoding.EncodeToString(append([]byte{9}, canary...)), "base64"},
		{"base64url offset 2", base64.URLEncoding.EncodeToString(append([]byte{9, 9}, canary...)), "base64url"},
		{"decimal slice", sprintf("%v", canary[:12]), "byte numbers"},
		{"hex array", sprintf("%#v", arr), "byte numbers"},
		{"traceback words", "main.f(0x" + strconv.FormatUint(binary.LittleEndian.Uint64(canary[8:]), 16) + ", 0x1)", "word numbers"},
	}
	for _, tt := range tests {
		got := leakForms([]byte(tt.out), canary)
		has := false
		for _, f := range got {
			has = has || f == tt.want
		}
		if !has {
			t.Errorf("%s: forms %v, want %q among them", tt.name, got, tt.want)
		}
	}
	if got := leakForms([]byte("REDACTED {0xc000012345, 0x40} arena(memfd_secret, 4096 bytes)"), canary); len(got) != 0 {
		t.Errorf("false positive on harmless text: %v", got)
	}
}
