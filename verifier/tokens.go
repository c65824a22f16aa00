package verifier

import "bytes"

// Token shapes (DESIGN.md "Tokens"):
//
//	irreversible  redacted:<category>:<n>      n ≥ 1, decimal, no leading zero
//	reversible    pcv:<ns>:<category>:<mac>    ns 10, mac 20 chars of [a-z2-7]
const (
	nsLen  = 10
	macLen = 20
	// maxIrreversibleLen bounds the length of an irreversible token:
	// "redacted:", the longest category, ":" and up to 20 digits.
	maxIrreversibleLen = 48
)

// parseIrreversible parses an irreversible token and returns its category
// index and number.
func parseIrreversible(tok []byte) (cat int, n int, ok bool) {
	rest, found := bytes.CutPrefix(tok, []byte("redacted:"))
	if !found {
		return 0, 0, false
	}
	k := bytes.IndexByte(rest, ':')
	if k < 0 {
		return 0, 0, false
	}
	cat = categoryIndex(rest[:k])
	num := rest[k+1:]
	if cat < 0 || len(num) == 0 || len(num) > 15 || num[0] == '0' {
		return 0, 0, false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		n = n*10 + int(c-'0')
	}
	return cat, n, true
}

// parseReversible parses a reversible token and returns its namespace and
// category index.
func parseReversible(tok []byte) (ns []byte, cat int, ok bool) {
	rest, found := bytes.CutPrefix(tok, []byte("pcv:"))
	if !found || len(rest) < nsLen+1+1+macLen || rest[nsLen] != ':' {
		return nil, 0, false
	}
	ns = rest[:nsLen]
	mac := rest[len(rest)-macLen:]
	if rest[len(rest)-macLen-1] != ':' || !base32Lower(ns) || !base32Lower(mac) {
		return nil, 0, false
	}
	cat = categoryIndex(rest[nsLen+1 : len(rest)-macLen-1])
	if cat < 0 {
		return nil, 0, false
	}
	return ns, cat, true
}

func base32Lower(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// tokenOfCategory reports whether tok has either token shape and names
// category cat.
func tokenOfCategory(tok []byte, cat int) bool {
	if c, _, ok := parseIrreversible(tok); ok {
		return c == cat
	}
	if _, c, ok := parseReversible(tok); ok {
		return c == cat
	}
	return false
}

// appendIrreversible appends "redacted:<category>:<n>".
func appendIrreversible(dst []byte, cat, n int) []byte {
	dst = append(dst, "redacted:"...)
	dst = append(dst, categories[cat]...)
	dst = append(dst, ':')
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(dst, d[i:]...)
}
