package service

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

func backup(t *testing.T, v *Vault) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := v.Backup(&buf); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	return buf.Bytes()
}

// windows reports whether any 32-byte window of data equals a key.
func windows(data []byte, keys [][]byte) bool {
	for _, k := range keys {
		if len(k) == 32 && bytes.Contains(data, k) {
			return true
		}
	}
	return false
}

// TestBackupHoldsNoKeys is K1: a backup holds no 32-byte window equal to
// any data key or epoch key, no file of the key directory, and no value.
func TestBackupHoldsNoKeys(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	var vals [][]byte
	for i := range 4 {
		ps, vs := pairsOf("k1", 3)
		r := grant(t, v, ps)
		if i%2 == 0 {
			bind(t, v, r)
		}
		vals = append(vals, vs...)
	}
	mat, err := vaulttest.ReadMaterial(e.keys)
	if err != nil {
		t.Fatalf("reading the key directory: %v", err)
	}
	if len(mat.DEKs) != 4 || len(mat.EpochKeys) != 1 {
		t.Fatalf("key material: %d data keys, %d epoch keys", len(mat.DEKs), len(mat.EpochKeys))
	}
	b := backup(t, v)
	if windows(b, mat.All()) {
		t.Errorf("the backup holds a data key or an epoch key")
	}
	files, err := vaulttest.Files(e.keys)
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		if len(content) >= 16 && bytes.Contains(b, content) {
			t.Errorf("the backup holds the key-directory file %s", p)
		}
	}
	if hits := vaulttest.Find(b, vals); len(hits) > 0 {
		t.Errorf("the backup holds values %v", hits)
	}
	// The scan can fail: a planted key is found.
	if !windows(append(bytes.Clone(b), mat.All()[0]...), mat.All()) {
		t.Fatalf("the window scan cannot find a planted key")
	}
}

// TestProveErasure is K2: after A is terminal, a pre-terminal backup
// restored into a scratch store leaves A undecryptable while B decrypts;
// without the terminal step (negative control) A decrypts.
func TestProveErasure(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("k2", 2)
	a := grant(t, v, ps)
	b := grant(t, v, ps)
	bind(t, v, a)
	pre := backup(t, v)

	// Negative control: nothing terminal yet, A decrypts.
	ctl, err := v.ProveErasure(bytes.NewReader(pre), a.Lease.ID, b.Lease.ID)
	if err != nil {
		t.Fatalf("ProveErasure (control): %v", err)
	}
	if ctl.Proven || !ctl.Destroyed.Decrypts || !ctl.Live.Decrypts || ctl.Destroyed.Entries != 2 {
		t.Fatalf("control: %+v / %+v", ctl.Destroyed, ctl.Live)
	}

	if _, err := v.Revoke(ctx, principal, a.Lease.ID); err != nil {
		t.Fatal(err)
	}
	rep, err := v.ProveErasure(bytes.NewReader(pre), a.Lease.ID, b.Lease.ID)
	if err != nil {
		t.Fatalf("ProveErasure: %v", err)
	}
	want := Report{
		Schema: ErasureSchema, Epoch: 1, Proven: true,
		Destroyed: Probe{Lease: a.Lease.ID, InBackup: true, State: "ACTIVE", MapInBackup: true,
			Code: receipts.LeaseUnrecoverable, Reason: reasonNoKey},
		Live: &Probe{Lease: b.Lease.ID, InBackup: true, State: "ACTIVE", MapInBackup: true, Decrypts: true, Entries: 2},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}

	// After a rotation the proof still holds, and the live lease still opens.
	if _, err := v.Rotate(); err != nil {
		t.Fatal(err)
	}
	rep, err = v.ProveErasure(bytes.NewReader(pre), a.Lease.ID, b.Lease.ID)
	if err != nil || !rep.Proven || rep.Epoch != 2 {
		t.Errorf("after rotation: %+v, %v", rep, err)
	}

	// The offline proof, with its own arena and a read-only key directory,
	// agrees; it never writes to the key directory.
	before, _ := vaulttest.Files(e.keys)
	off, err := ProveErasure(bytes.NewReader(pre), e.keys, a.Lease.ID, b.Lease.ID)
	if err != nil || !off.Proven || !off.Live.Decrypts || off.Destroyed.Decrypts {
		t.Errorf("offline proof: %+v, %v", off, err)
	}
	after, _ := vaulttest.Files(e.keys)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the offline proof changed the key directory:\n%s", diff)
	}

	// A backup taken after the terminal step holds no map of A at all: it
	// proves nothing (before, this was reported proven).
	post := backup(t, v)
	rep, err = v.ProveErasure(bytes.NewReader(post), a.Lease.ID, b.Lease.ID)
	if err != nil || rep.Proven || rep.Destroyed.MapInBackup || rep.Destroyed.Reason != reasonNoMap || !rep.Live.Decrypts {
		t.Errorf("post-terminal backup: %+v, %v", rep, err)
	}
	// A lease that is not in the backup proves nothing.
	c := grant(t, v, ps)
	rep, err = v.ProveErasure(bytes.NewReader(pre), c.Lease.ID, "")
	if err != nil || rep.Proven || rep.Destroyed.InBackup {
		t.Errorf("lease absent from the backup: %+v, %v", rep, err)
	}
	// A damaged backup is refused.
	bad := bytes.Clone(pre)
	bad[40] ^= 1
	_, err = v.ProveErasure(bytes.NewReader(bad), a.Lease.ID, "")
	wantCode(t, err, receipts.MalformedRecord)
}

// TestBadgerResidue is K6: after a terminal transition and Close, the
// Badger files may hold ciphertext but never a value and never a key.
func TestBadgerResidue(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, vals := pairsOf("k6", 4)
	a := grant(t, v, ps)
	bind(t, v, a)
	b := grant(t, v, ps)
	mat, err := vaulttest.ReadMaterial(e.keys)
	if err != nil {
		t.Fatal(err)
	}
	ret := digest("sha256:")
	if _, err := v.Claim(ctx, principal, a.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Consume(ctx, principal, a.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Revoke(ctx, principal, b.Lease.ID); err != nil {
		t.Fatal(err)
	}
	v.Close()
	files, err := vaulttest.Files(e.state)
	if err != nil || len(files) == 0 {
		t.Fatalf("state dir: %d files, %v", len(files), err)
	}
	total := 0
	for p, content := range files {
		total += len(content)
		if hits := vaulttest.FindRaw(content, vals); len(hits) > 0 {
			t.Errorf("%s holds values %v", p, hits)
		}
		if windows(content, mat.All()) {
			t.Errorf("%s holds a data key or an epoch key", p)
		}
	}
	if total == 0 {
		t.Fatalf("nothing was written to the state dir")
	}
	hits, err := vaulttest.ScanDir(e.keys, vals)
	if err != nil || len(hits) > 0 {
		t.Errorf("key dir holds values: %v %v", hits, err)
	}
}

// TestRestore: a backup restored into an empty state directory with the
// surviving key directory brings live leases back (their maps decrypt);
// leases terminal in the backup lose any surviving key; restoring over
// newer state changes nothing.
func TestRestore(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("rst", 2)
	live := grant(t, v, ps)
	bind(t, v, live)
	gone := grant(t, v, ps)
	if _, err := v.Revoke(ctx, principal, gone.Lease.ID); err != nil {
		t.Fatal(err)
	}
	b := backup(t, v)
	v.Close()

	e2 := newEnv(t)
	e2.keys = e.keys
	e2.opt.KeyDir = e.keys
	v2 := e2.open(t)
	st, err := v2.Restore(bytes.NewReader(b))
	if err != nil || st.Restored != 2 || st.Maps != 1 {
		t.Fatalf("Restore: %+v, %v", st, err)
	}
	if err := v2.WithMap(ctx, live.Lease.ID, func(*Map) error { return nil }); err != nil {
		t.Errorf("restored live lease: %v", err)
	}
	if s, k := state(t, v2, gone.Lease.ID); s != lease.Revoked || k != KeyDestroyed {
		t.Errorf("restored revoked lease: %v %v", s, k)
	}
	// Consume, then restore the old backup again: the lease stays consumed.
	ret := digest("sha256:")
	if _, err := v2.Claim(ctx, principal, live.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Consume(ctx, principal, live.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	st, err = v2.Restore(bytes.NewReader(b))
	if err != nil || st.Skipped != 2 || st.Restored != 0 {
		t.Fatalf("second Restore: %+v, %v", st, err)
	}
	if s, _ := state(t, v2, live.Lease.ID); s != lease.Consumed {
		t.Errorf("restore moved a consumed lease back to %v", s)
	}
	_, err = v2.Restore(bytes.NewReader(b[:len(b)-3]))
	wantCode(t, err, receipts.MalformedRecord)
}
