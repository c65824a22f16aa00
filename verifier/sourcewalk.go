package verifier

import (
	"bytes"
	"errors"

	"github.com/privacycut/privacycut/receipts"
)

// The walk recognizes the source on another goroutine, which runs ahead of
// the pairing by up to a few batches of records. It owns the value table and
// everything the source alone tells (coverage refusals, categories used,
// counts); the pairing goroutine receives each record's spans and value
// numbers in batches and shares nothing else with it.

// sourceRecord is one source record as the pairing reads it.
type sourceRecord struct {
	start, end int // the record's bytes, and where the next one starts
	refused    bool
	spans      []span
	slots      []sourceSlot
}

// sourceSlot is one owner slot of a source record: its value's number and
// irreversible number.
type sourceSlot struct {
	id, n int32
}

// sourceWalk is what the source goroutine learns; the pairing reads it once
// the goroutine has ended.
type sourceWalk struct {
	recognized              bool
	counts                  [8]int
	used                    [8]bool
	records, publics, slots int
	findings                int // recognized finding records
}

// sourceBatch carries records in order; each record's spans and slots are
// ranges of the batch's arrays.
type sourceBatch struct {
	recs  []batchRecord
	spans []span
	slots []sourceSlot
}

type batchRecord struct {
	start, end     int
	refused        bool
	spanLo, spanHi int
	slotLo, slotHi int
}

const (
	batchRecords = 256 // records per batch
	batchPool    = 4   // batches in flight
)

// sourceStream is the pairing's end of the source goroutine.
type sourceStream struct {
	full    chan *sourceBatch // batches of records, in order; closed at the end
	empty   chan *sourceBatch // batches returned for reuse
	quit    chan struct{}     // closed when the pairing stops
	task    *task
	b       *sourceBatch
	i       int
	stopped bool
}

var errSourceStream = errors.New("verifier: source records out of step")

// startSource starts recognizing the source parts on another goroutine,
// numbering the owner values in vt and writing what it learns to sw.
func (c *check) startSource(vt *valueTable, allowed *[8]bool, sw *sourceWalk) *sourceStream {
	st := &sourceStream{
		full:  make(chan *sourceBatch, batchPool),
		empty: make(chan *sourceBatch, batchPool),
		quit:  make(chan struct{}),
	}
	for range batchPool {
		st.empty <- &sourceBatch{}
	}
	st.task = c.start(func() { c.sourceRecords(vt, allowed, sw, st) })
	return st
}

// sourceRecords recognizes every source part record by record and sends
// the records in batches. It evaluates the source's share of coverage.
func (c *check) sourceRecords(vt *valueTable, allowed *[8]bool, sw *sourceWalk, st *sourceStream) {
	defer close(st.full)
	cov := &c.out[cCoverage]
	rec := newRecognizer(c.voc, false)
	rec.values = vt
	sw.recognized = true
	var b *sourceBatch
	select {
	case b = <-st.empty:
	case <-st.quit:
		return
	}
	for p := range c.src.Parts {
		s := c.src.Parts[p].Text
		if len(s) > MaxPartTextBytes {
			sw.recognized = false
			continue
		}
		for si, line := 0, 1; si < len(s); line++ {
			sStart, spanLo, slotLo := si, len(b.spans), len(b.slots)
			var sref *refusal
			b.spans, si, sref = rec.record(s, si, b.spans)
			for _, id := range rec.valueIDs {
				b.slots = append(b.slots, sourceSlot{int32(id), vt.n[id]})
			}
			for _, sp := range b.spans[spanLo:] {
				switch {
				case sp.kind == spanOwnerKey:
					if !allowed[sp.cat] && c.plan != nil {
						cov.fail("%s %s", receipts.ProhibitedCategory, where(p, line, sStart, sp.start, sp.end-sp.start))
					}
					sw.used[sp.cat] = true
				case sp.kind == spanValue:
					if sref == nil {
						sw.counts[sp.cat]++
						sw.slots++
					}
				case sp.kind.public():
					sw.publics++
				}
			}
			if sref != nil {
				sw.recognized = false
				cov.fail("%s %s", sref.code, where(p, line, sStart, sref.off, sref.length))
			} else {
				sw.records++
				if bytes.HasPrefix(s[sStart:], []byte("finding ")) {
					sw.findings++
				}
			}
			b.recs = append(b.recs, batchRecord{sStart, si, sref != nil, spanLo, len(b.spans), slotLo, len(b.slots)})
			if len(b.recs) == batchRecords {
				if b = st.send(b); b == nil {
					return
				}
			}
		}
	}
	if len(b.recs) > 0 {
		st.send(b)
	}
}

// send hands a full batch over and returns an empty one, or nil when the
// pairing has stopped.
func (st *sourceStream) send(b *sourceBatch) *sourceBatch {
	select {
	case st.full <- b:
	case <-st.quit:
		return nil
	}
	select {
	case b = <-st.empty:
		b.recs, b.spans, b.slots = b.recs[:0], b.spans[:0], b.slots[:0]
		return b
	case <-st.quit:
		return nil
	}
}

// next returns the next source record, which must start at start. Its
// spans and slots are valid until the following call.
func (st *sourceStream) next(start int) sourceRecord {
	for st.b == nil || st.i == len(st.b.recs) {
		if st.b != nil {
			st.empty <- st.b
			st.b = nil
		}
		b, ok := <-st.full
		if !ok {
			// The source goroutine ended early: it panicked, which
			// finish reports.
			st.finish()
			panic(errSourceStream)
		}
		st.b, st.i = b, 0
	}
	r := st.b.recs[st.i]
	st.i++
	if r.start != start {
		panic(errSourceStream)
	}
	return sourceRecord{
		start: r.start, end: r.end, refused: r.refused,
		spans: st.b.spans[r.spanLo:r.spanHi:r.spanHi],
		slots: st.b.slots[r.slotLo:r.slotHi:r.slotHi],
	}
}

// finish waits for the source goroutine, which must have sent every record
// the pairing read and no other.
func (st *sourceStream) finish() {
	if st.b != nil {
		if st.i != len(st.b.recs) {
			panic(errSourceStream)
		}
		st.empty <- st.b
		st.b = nil
	}
	for b := range st.full {
		if len(b.recs) != 0 {
			panic(errSourceStream)
		}
		st.empty <- b
	}
	st.stop()
	st.task.wait()
}

// stop tells the source goroutine that the pairing stopped. The walk defers
// it, so that a panic in the pairing does not leave the goroutine blocked.
func (st *sourceStream) stop() {
	if !st.stopped {
		st.stopped = true
		close(st.quit)
	}
}
