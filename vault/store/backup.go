package store

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"io"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/privacycut/privacycut/lease"
)

// The backup stream format (see the package documentation).
const (
	backupMagic = "privacycut-vault-backup/2\n"
	// backupMagicV1 started the streams of before, whose trailer was a
	// plain SHA-256: anyone could edit one and recompute it. They are
	// refused (ErrBackupVersion).
	backupMagicV1 = "privacycut-vault-backup/1\n"
	// KeyIDSize is the size of the backup key id a stream names.
	KeyIDSize = 16
	// macSize is the size of the trailer, HMAC-SHA256.
	macSize  = sha256.Size
	recLease = 'L'
	recMap   = 'M'
	recEnd   = 'E'

	// MaxBackup bounds a backup stream read by ReadBackup (256 MiB); it is
	// held in memory while it is verified and applied.
	MaxBackup = 256 << 20
)

// BackupStats counts what a backup holds.
type BackupStats struct {
	Leases int   `json:"leases"`
	Maps   int   `json:"maps"`
	Bytes  int64 `json:"bytes"`
}

// MAC keys a backup stream's integrity check: the public id of the backup
// key, which the stream names, and HMAC-SHA256 keyed with that key (the
// vault takes both from its key directory, which no backup holds). Hash is
// used for one stream and reset first.
type MAC struct {
	KeyID [KeyIDSize]byte
	Hash  hash.Hash
}

// Backup writes every lease record and every sealed map, from one
// consistent snapshot, in the backup stream format, authenticated under
// mac. It writes nothing from the key directory (the store never sees it)
// and nothing of the store's metadata.
func (s *Store) Backup(w io.Writer, mac MAC) (BackupStats, error) {
	const op = "backup"
	var st BackupStats
	if mac.Hash == nil {
		return st, newError(op, ErrInvalid, nil)
	}
	h := mac.Hash
	h.Reset()
	cw := &countWriter{w: io.MultiWriter(w, h)}
	bw := bufio.NewWriterSize(cw, 64<<10)
	if _, err := bw.WriteString(backupMagic); err != nil {
		return st, newError(op, ErrIO, err)
	}
	if _, err := bw.Write(mac.KeyID[:]); err != nil {
		return st, newError(op, ErrIO, err)
	}
	var n uint64
	err := s.db.View(func(txn *badger.Txn) error {
		for _, p := range []byte{prefixLease, prefixMap} {
			opt := badger.DefaultIteratorOptions
			opt.Prefix = []byte{p}
			it := txn.NewIterator(opt)
			for it.Rewind(); it.Valid(); it.Next() {
				k := it.Item().Key()
				if len(k) != 17 {
					continue
				}
				err := it.Item().Value(func(v []byte) error {
					return writeRecord(bw, p, k[1:], v)
				})
				if err != nil {
					it.Close()
					return err
				}
				n++
				if p == prefixLease {
					st.Leases++
				} else {
					st.Maps++
				}
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return st, wrapErr(op, err)
	}
	var end [9]byte
	end[0] = recEnd
	binary.BigEndian.PutUint64(end[1:], n)
	if _, err := bw.Write(end[:]); err != nil {
		return st, newError(op, ErrIO, err)
	}
	if err := bw.Flush(); err != nil {
		return st, newError(op, ErrIO, err)
	}
	if _, err := w.Write(h.Sum(nil)); err != nil {
		return st, newError(op, ErrIO, err)
	}
	st.Bytes = cw.n + macSize
	return st, nil
}

func writeRecord(w io.Writer, prefix byte, id, v []byte) error {
	var hdr [21]byte
	hdr[0] = recLease
	if prefix == prefixMap {
		hdr[0] = recMap
	}
	copy(hdr[1:17], id)
	binary.BigEndian.PutUint32(hdr[17:], uint32(len(v)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(v)
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Snapshot is a verified, parsed backup.
type Snapshot struct {
	leases []lease.Lease
	maps   map[[16]byte][]byte
}

// Leases returns the lease records of the backup, in stream order.
func (b *Snapshot) Leases() []lease.Lease { return append([]lease.Lease(nil), b.leases...) }

// HasMap reports whether the backup holds a sealed map for the lease.
func (b *Snapshot) HasMap(id string) bool {
	k, ok := IDBytes(id)
	if !ok {
		return false
	}
	_, ok = b.maps[k]
	return ok
}

// ReadBackup reads and verifies a backup stream: the header, the backup key
// id (another key's is ErrBackupKey), the HMAC trailer under mac (checked
// in constant time before any record is parsed), every record (lengths
// within limits, lease records strictly decoded and checked, each lease
// and map at most once, every map belonging to a lease of the backup) and
// the record count. A stream of the earlier format, with a plain SHA-256
// trailer, is ErrBackupVersion. Nothing is applied until the whole stream
// verifies. Errors name the byte offset, never content.
func ReadBackup(r io.Reader, mac MAC) (*Snapshot, error) {
	const op = "read-backup"
	if mac.Hash == nil {
		return nil, newError(op, ErrInvalid, nil)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxBackup+1))
	if err != nil {
		return nil, newError(op, ErrIO, err)
	}
	if len(data) > MaxBackup {
		return nil, newError(op, ErrTooLarge, nil)
	}
	return parseBackup(op, data, mac)
}

// parseBackup is ReadBackup over the stream's bytes.
func parseBackup(op string, data []byte, mac MAC) (*Snapshot, error) {
	fail := func(sentinel error, off int) (*Snapshot, error) {
		e := newError(op, sentinel, nil)
		e.Offset = int64(off)
		return nil, e
	}
	bad := func(off int) (*Snapshot, error) { return fail(ErrBackup, off) }
	if bytes.HasPrefix(data, []byte(backupMagicV1)) {
		return fail(ErrBackupVersion, 0)
	}
	head := len(backupMagic) + KeyIDSize
	if len(data) < head+9+macSize || !bytes.HasPrefix(data, []byte(backupMagic)) {
		return bad(0)
	}
	if !hmac.Equal(data[len(backupMagic):head], mac.KeyID[:]) {
		return fail(ErrBackupKey, len(backupMagic))
	}
	body, sum := data[:len(data)-macSize], data[len(data)-macSize:]
	mac.Hash.Reset()
	mac.Hash.Write(body)
	if !hmac.Equal(mac.Hash.Sum(nil), sum) {
		return bad(len(body))
	}
	b := &Snapshot{maps: map[[16]byte][]byte{}}
	seen := map[[16]byte]bool{}
	var n uint64
	off := head
	for {
		if off >= len(body) {
			return bad(off)
		}
		kind := body[off]
		if kind == recEnd {
			if len(body)-off != 9 || binary.BigEndian.Uint64(body[off+1:]) != n {
				return bad(off)
			}
			break
		}
		if (kind != recLease && kind != recMap) || len(body)-off < 21 {
			return bad(off)
		}
		id := [16]byte(body[off+1 : off+17])
		vlen := int(binary.BigEndian.Uint32(body[off+17 : off+21]))
		limit := MaxRecord
		if kind == recMap {
			limit = MaxMap
		}
		if vlen > limit || vlen > len(body)-off-21 {
			return bad(off + 17)
		}
		v := body[off+21 : off+21+vlen]
		switch kind {
		case recLease:
			if seen[id] {
				return bad(off)
			}
			l, err := decodeLease(op, v, lease.FormatID(id))
			if err != nil {
				return bad(off + 21)
			}
			seen[id] = true
			b.leases = append(b.leases, l)
		case recMap:
			if _, dup := b.maps[id]; dup {
				return bad(off)
			}
			b.maps[id] = bytes.Clone(v)
		}
		n++
		off += 21 + vlen
	}
	for id := range b.maps {
		if !seen[id] {
			return bad(len(body))
		}
	}
	return b, nil
}

// RestoreStats counts what Restore did.
type RestoreStats struct {
	Restored int `json:"restored"` // leases added
	Maps     int `json:"maps"`     // sealed maps added with them
	Skipped  int `json:"skipped"`  // leases already present, kept as they are
}

// Restore merges a verified backup into the store. A lease the store
// already holds is kept as it is (it is at least as far along: no state
// ever goes backwards); a lease it does not hold is added with its sealed
// map, if the backup has one and the lease is live. Each lease is one
// transaction. Restore never touches keys: a restored lease whose data key
// was destroyed stays unrecoverable.
func (s *Store) Restore(b *Snapshot) (RestoreStats, error) {
	const op = "restore"
	var st RestoreStats
	for _, l := range b.leases {
		id, _ := IDBytes(l.ID)
		lk, mk := key(prefixLease, id), key(prefixMap, id)
		rec, err := encodeLease(l)
		if err != nil {
			return st, err
		}
		m, hasMap := b.maps[id]
		if !l.Live() {
			hasMap = false
		}
		added := false
		mu := s.c.lock(id)
		s.counts.gate.RLock()
		err = s.commit(op, writeEstimate, func(txn *badger.Txn) ([]put, error) {
			added = false
			if _, err := txn.Get(lk); err == nil {
				return nil, nil
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return nil, err
			}
			puts := []put{{key: lk, value: rec}}
			if hasMap {
				puts = append(puts, put{key: mk, value: m})
			}
			added = true
			return puts, nil
		})
		switch {
		case err != nil:
			s.c.evict(id)
			s.counts.unknown()
		case added:
			s.counts.moved(0, false, l.State)
		}
		s.counts.gate.RUnlock()
		mu.Unlock()
		if err != nil {
			return st, err
		}
		if !added {
			st.Skipped++
			continue
		}
		st.Restored++
		if hasMap {
			st.Maps++
		}
	}
	return st, nil
}
