package verifier

// walkResult is what the walk learns of the source and the export, for
// the claims to conclude.
type walkResult struct {
	walked           bool // the source and the vocabulary were decoded and walked
	sourceRecognized bool // every source record was recognized

	// Of the source's recognized records.
	counts   [8]int  // owner spans per category
	used     [8]bool // categories of the source's owner slots
	findings int     // finding records
	records  int
	publics  int
	slots    int

	// paired: the export has the source's parts and kinds, and every
	// record of the source was recognized and paired with an export record
	// of the same skeleton (pairRecord).
	paired bool

	values *valueTable // the source's owner values, numbered
	tokens *tokenState // token-consistency across the cut
	issued int         // values whose token the Issuer confirmed
	bad    []region    // export regions that hold no known text
}

// region is a byte range of an export part that is neither public text, a
// literal nor a well-formed token.
type region struct {
	part, start, end int
}

// where formats a position inside a part's text: part, 1-based line, 1-based
// byte column, length. line is the record's line and recStart its offset.
func where(part, line, recStart, off, length int) string {
	return "part " + itoa(part) + " line " + itoa(line) + " col " + itoa(off-recStart+1) + " len " + itoa(length)
}

// lazyWhere formats a position only when a detail is written.
type lazyWhere struct{ part, line, recStart, off, length int }

func (w lazyWhere) String() string { return where(w.part, w.line, w.recStart, w.off, w.length) }

// walk reads every source part and the export part of the same index
// record by record, each with its own recognizer, and pairs the records.
// Each record's findings go to the claim they concern: coverRecord
// (coverage), pairRecord (public-preserved), ownerSlots (owners-replaced),
// tokenSlots (token-consistency); no-residual gets the export regions that
// hold no known text.
//
// Nothing proportional to the texts is built: owner values and tokens are
// numbered in byte-keyed tables.
func (c *check) walk() {
	w := &c.w
	cov, pub, own, tok, res := &c.out[cCoverage], &c.out[cPublic], &c.out[cOwners], &c.out[cTokens], &c.out[cResidual]
	if c.src == nil {
		failEach([]*outcome{cov, pub, own, tok, res}, "source: not decodable: %s", errText(c.srcErr))
		return
	}
	if c.voc == nil {
		failEach([]*outcome{cov, pub, own, tok, res}, "vocabulary: not decodable: %s", errText(c.vocErr))
		return
	}
	w.walked, w.sourceRecognized = true, true
	allowed := c.coverMetadata()
	haveExp := c.exp != nil
	if !haveExp {
		msg := "export: not decodable"
		if c.expErr != nil {
			msg += ": " + errText(c.expErr)
		}
		failEach([]*outcome{pub, own, tok, res}, "%s", msg)
	}
	if c.mode == "" {
		tok.fail("plan: mode unknown")
	}

	w.values = newValueTable()
	w.tokens = &tokenState{mode: c.mode, tokens: newByteTable()}
	c.onEnd(w.values.release)
	c.onEnd(w.tokens.tokens.release)
	srcRec := newRecognizer(c.voc, false)
	srcRec.values = w.values
	expRec := newRecognizer(c.voc, true)
	// The export recognizer finds the items the source record just looked
	// up without hashing them again.
	expRec.memo = srcRec.memo

	nsrc, nexp := len(c.src.Parts), len(c.exp)
	w.paired = haveExp && nsrc == nexp
	if haveExp && nsrc != nexp {
		pub.fail("export has %d parts, source has %d", nexp, nsrc)
		own.fail("parts could not be paired")
		tok.fail("parts could not be paired")
	}
	var sspans, espans []span

	for p := range max(nsrc, nexp) {
		if p >= nsrc {
			// An export part with no source part: nothing in it is known text.
			w.bad = append(w.bad, region{p, 0, len(c.exp[p].text)})
			continue
		}
		s := c.src.Parts[p].Text
		hasE := haveExp && p < nexp
		var e []byte
		if hasE {
			e = c.exp[p].text
			if c.exp[p].kind != c.src.Parts[p].Kind {
				pub.fail("part %d: kind differs", p)
				w.paired = false
			}
		}
		if len(s) > MaxPartTextBytes {
			// Refused whole by coverage (checkMetadata).
			w.sourceRecognized, w.paired = false, false
			if hasE {
				w.bad = append(w.bad, region{p, 0, len(e)})
			}
			continue
		}
		for si, ei, line := 0, 0, 1; si < len(s) || (hasE && ei < len(e)); line++ {
			sStart, eStart := si, ei
			sHave, eHave := si < len(s), hasE && ei < len(e)
			var sref, eref *refusal
			if sHave {
				sspans, si, sref = srcRec.record(s, si, sspans[:0])
				c.coverRecord(p, line, sStart, s, sspans, sref, &allowed)
			}
			if eHave {
				espans, ei, eref = expRec.record(e, ei, espans[:0])
				c.ownerSlots(p, line, eStart, e, espans)
				if eref != nil {
					w.bad = append(w.bad, region{p, eref.off, ei})
				}
			}
			switch {
			case !hasE:
				w.paired = false
			case c.pairRecord(p, line, s, sspans, sHave, sref, e, eStart, espans, eHave, eref):
				c.tokenSlots(p, line, eStart, sspans, e, espans, srcRec.valueIDs)
			default:
				w.paired = false
			}
		}
	}
	if !w.sourceRecognized {
		w.paired = false
	}
}
