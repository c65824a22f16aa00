package rehydrate

// Reversible tokens (docs/DESIGN.md "Tokens"):
//
//	pcv:<ns>:<category>:<mac>
//
// ns is 10 and mac 20 characters of lower-case base32 ([a-z2-7]); category
// is one of the eight owner categories. Recognition is an exact, whole-value
// match of this shape: nothing is trimmed, unescaped, case-folded or
// completed.

const (
	tokenPrefix = "pcv:"
	nsLen       = 10
	macLen      = 20
	// minTokenLen and maxTokenLen bound the length of a token: the shortest
	// category has 4 letters, the longest 10.
	minTokenLen = len(tokenPrefix) + nsLen + 1 + 4 + 1 + macLen
	maxTokenLen = len(tokenPrefix) + nsLen + 1 + 10 + 1 + macLen
)

// The owner categories of docs/FORMATS.md#grammar, in the order of docs/FORMATS.md#codes. credential is a category
// of the grammar but is always prohibited: no marking may name it.
var categories = [...]string{"module", "package", "function", "file", "team", "person", "host", "credential"}

const credential = "credential"

// categoryIndex returns the index of c in categories, or -1.
func categoryIndex(c []byte) int {
	for i, k := range categories {
		if string(c) == k {
			return i
		}
	}
	return -1
}

// Categories returns the owner categories a marking may name, in the order of docs/FORMATS.md#codes
// (every category of docs/FORMATS.md#grammar except credential). The slice is a copy.
func Categories() []string {
	return append([]string(nil), categories[:len(categories)-1]...)
}

// TokenLen returns the length in bytes of a token of category c, or 0 if c
// is not a category.
func TokenLen(c string) int {
	if categoryIndex([]byte(c)) < 0 {
		return 0
	}
	return len(tokenPrefix) + nsLen + 1 + len(c) + 1 + macLen
}

// b32set marks the bytes of lower-case base32: [a-z2-7].
var b32set = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '2'; c <= '7'; c++ {
		t[c] = true
	}
	return t
}()

func allB32(b []byte) bool {
	for _, c := range b {
		if !b32set[c] {
			return false
		}
	}
	return true
}

// parseToken reports whether b is exactly a token, and if so returns its
// namespace (a view into b) and the index of its category. It never looks
// past a failed length or prefix check, so prose costs a few comparisons.
func parseToken(b []byte) (ns []byte, cat int, ok bool) {
	if len(b) < minTokenLen || len(b) > maxTokenLen || string(b[:len(tokenPrefix)]) != tokenPrefix {
		return nil, -1, false
	}
	ns = b[len(tokenPrefix) : len(tokenPrefix)+nsLen]
	rest := b[len(tokenPrefix)+nsLen:]
	macStart := len(rest) - macLen
	if rest[0] != ':' || rest[macStart-1] != ':' {
		return nil, -1, false
	}
	cat = categoryIndex(rest[1 : macStart-1])
	if cat < 0 || !allB32(ns) || !allB32(rest[macStart:]) {
		return nil, -1, false
	}
	return ns, cat, true
}

// validNamespace reports whether ns is a well-formed namespace.
func validNamespace(ns string) bool { return len(ns) == nsLen && allB32([]byte(ns)) }
