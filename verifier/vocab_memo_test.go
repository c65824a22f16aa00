package verifier

import (
	"strings"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/receipts"
)

// TestVocabularyKeptForTheSameBytes: the same bytes give the decoding kept
// from the last call; other bytes (one item more, or the same items written
// otherwise) are decoded anew, with their own digest; a vocabulary replaced
// while in use stays usable until its last user is done, and is freed then.
func TestVocabularyKeptForTheSameBytes(t *testing.T) {
	a := []byte(testVocab)
	v1, d1, done1, err := loadVocabulary(a)
	if err != nil {
		t.Fatal(err)
	}
	v2, d2, done2, _ := loadVocabulary(append([]byte(nil), a...))
	if v2 != v1 || d2 != d1 {
		t.Fatalf("the same bytes were decoded again (%p, %p) or got another digest", v1, v2)
	}
	// The same document with other white space: another decoding, the same
	// digest (the digest is of the canonical form).
	spaced := []byte(strings.Replace(testVocab, `"schema"`, ` "schema"`, 1))
	v3, d3, done3, err := loadVocabulary(spaced)
	if err != nil || v3 == v1 || d3 != d1 {
		t.Fatalf("other bytes: %p (first %p), digest %s want %s, %v", v3, v1, d3, d1, err)
	}
	// v1 was replaced and has two users: still readable.
	if !v1.items.has(tagStatus, []byte("affected")) {
		t.Fatal("a replaced vocabulary in use lost its items")
	}
	before := vocabsFreed.Load()
	done1()
	if vocabsFreed.Load() != before {
		t.Fatal("a replaced vocabulary was freed while still in use")
	}
	done2()
	if vocabsFreed.Load() != before+1 {
		t.Fatalf("a replaced vocabulary was not freed by its last user (%d freed)", vocabsFreed.Load()-before)
	}
	done3()
	// A document that does not decode is not kept: the next call decodes
	// the good one again.
	if v, _, done, err := loadVocabulary([]byte(`{"schema":"Vocabulary@2"}`)); v != nil || err == nil {
		t.Fatalf("a bad vocabulary decoded: %v", err)
	} else {
		done()
	}
	v4, _, done4, _ := loadVocabulary(spaced)
	defer done4()
	if v4 != v3 {
		t.Fatal("a refused vocabulary displaced the kept one")
	}
}

// TestVerifyConcurrentVocabularies: verifications of two vocabularies'
// cuts at once, alternating, each pass; under -race this checks that the
// kept vocabulary is shared safely and never freed under a reader.
func TestVerifyConcurrentVocabularies(t *testing.T) {
	// Each goroutine has its own cut (a reversible cut's issuer is the
	// test's, not safe for concurrent use); the odd ones' vocabulary is the
	// same document written with other white space.
	reqs := make([]Request, 8)
	for i := range reqs {
		mode := receipts.ModeIrreversible
		if i%4 >= 2 {
			mode = receipts.ModeReversible
		}
		reqs[i] = makeCut(t, sampleParts, cutOptions{Mode: mode})
		if i%2 == 1 {
			reqs[i].Vocabulary = []byte(strings.Replace(string(reqs[i].Vocabulary), `"schema"`, ` "schema"`, 1))
		}
	}
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if v := Verify(req); v.Verdict != receipts.VerdictPass {
					t.Errorf("goroutine %d: %v", i, v.Failed())
					return
				}
			}
		}()
	}
	wg.Wait()
}
