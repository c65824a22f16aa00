package service

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
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

// prove runs the in-vault erasure proof as principal.
func proveT(t *testing.T, v *Vault, b []byte, destroyed, live string) Report {
	t.Helper()
	rep, err := v.ProveErasure(principal, bytes.NewReader(b), destroyed, live)
	if err != nil {
		t.Fatalf("ProveErasure: %v", err)
	}
	return rep
}

// TestProveErasure is K2: after A is terminal, a pre-terminal backup
// restored into a scratch store leaves A undecryptable for want of its key
// while B decrypts; without the terminal step (negative control) A
// decrypts and nothing is proven.
func TestProveErasure(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("k2", 2)
	a := grant(t, v, ps)
	b := grant(t, v, ps)
	bind(t, v, a)
	pre := backup(t, v)

	// Negative control: nothing terminal yet, A decrypts.
	ctl := proveT(t, v, pre, a.Lease.ID, b.Lease.ID)
	if ctl.Proven || !ctl.Destroyed.Decrypts || !ctl.Live.Decrypts || ctl.Destroyed.Entries != 2 || ctl.Reason != vaultapi.ReasonNotTerminal {
		t.Fatalf("control: %+v / %+v", ctl.Destroyed, ctl.Live)
	}

	if _, err := v.Revoke(ctx, principal, a.Lease.ID); err != nil {
		t.Fatal(err)
	}
	rep := proveT(t, v, pre, a.Lease.ID, b.Lease.ID)
	want := Report{
		Schema: ErasureSchema, Epoch: 1, Proven: true, BackupVerified: true,
		Destroyed: Probe{Lease: a.Lease.ID, InBackup: true, State: "ACTIVE", MapInBackup: true,
			Code: receipts.LeaseUnrecoverable, Reason: reasonNoKey, VaultState: "REVOKED"},
		Live: &Probe{Lease: b.Lease.ID, InBackup: true, State: "ACTIVE", MapInBackup: true, Decrypts: true, Entries: 2,
			VaultState: "ACTIVE", WrappedKey: true},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}

	// After a rotation the proof still holds (the backup key is not
	// rotated), and the live lease still opens.
	if _, err := v.Rotate(); err != nil {
		t.Fatal(err)
	}
	if rep := proveT(t, v, pre, a.Lease.ID, b.Lease.ID); !rep.Proven || rep.Epoch != 2 {
		t.Errorf("after rotation: %+v", rep)
	}

	// A backup taken after the terminal step holds no map of A at all: it
	// proves nothing.
	post := backup(t, v)
	if rep := proveT(t, v, post, a.Lease.ID, b.Lease.ID); rep.Proven || rep.Destroyed.MapInBackup || rep.Reason != vaultapi.ReasonNoMapInBackup || !rep.Live.Decrypts {
		t.Errorf("post-terminal backup: %+v", rep)
	}
	// A lease that is not in the backup proves nothing.
	c := grant(t, v, ps)
	if rep := proveT(t, v, pre, c.Lease.ID, ""); rep.Proven || rep.Destroyed.InBackup || rep.Reason != vaultapi.ReasonNotInBackup {
		t.Errorf("lease absent from the backup: %+v", rep)
	}
	_, err := v.ProveErasure(principal, bytes.NewReader(pre), "not-a-lease", "")
	wantErr(t, err, ErrInvalid)
}

// TestProveErasureConsumed: a lease consumed by a rehydration-style claim
// and consume proves erased from a backup taken while it was live.
func TestProveErasureConsumed(t *testing.T) {
	v := newEnv(t).open(t)
	ps, _ := pairsOf("k2c", 3)
	a := grant(t, v, ps)
	bind(t, v, a)
	pre := backup(t, v)
	ret := digest("sha256:")
	if _, err := v.Claim(ctx, principal, a.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Consume(ctx, principal, a.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	rep := proveT(t, v, pre, a.Lease.ID, "")
	if !rep.Proven || rep.Reason != "" || rep.Destroyed.VaultState != "CONSUMED" || rep.Destroyed.WrappedKey || rep.Destroyed.Reason != reasonNoKey {
		t.Errorf("consumed lease: %+v", rep)
	}
}

// TestProveErasureByAbsenceOnly: what the forgeries and accidents
// made "proven" is not. A live lease; a live lease's map corrupted in the
// store before the backup (the backup verifies, the map fails
// authentication); a backup edited and its plain SHA-256 recomputed; the
// same edit re-signed with the real backup key (a map failing
// authentication is still no proof); a lease whose wrapped key was deleted
// by hand while it is ACTIVE; a backup of another vault; and a backup of
// the earlier format. Each names its reason.
func TestProveErasureByAbsenceOnly(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("abs", 2)
	a := grant(t, v, ps)
	bind(t, v, a)
	b := grant(t, v, ps)
	pre := backup(t, v)
	mat, err := vaulttest.ReadMaterial(e.keys)
	if err != nil || len(mat.BackupKey) != 32 {
		t.Fatalf("backup key: %d bytes, %v", len(mat.BackupKey), err)
	}
	// The offset of a byte of A's map inside the backup: its ciphertext
	// follows the 'M' record header.
	sealed, err := v.store.Map(a.Lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	mapAt := bytes.Index(pre, sealed)
	if mapAt < 0 {
		t.Fatal("A's map is not in the backup")
	}
	flipped := bytes.Clone(pre)
	flipped[mapAt+len(sealed)/2] ^= 1

	other := newEnv(t).open(t)
	oa := grant(t, other, ps)
	otherBackup := backup(t, other)

	v1 := vaulttest.Resum(append([]byte("privacycut-vault-backup/1\n"), pre[len("privacycut-vault-backup/2\n")+16:]...))

	tests := []struct {
		name     string
		setup    func(t *testing.T)
		backup   []byte
		lease    string
		reason   string
		verified bool
	}{
		{name: "live lease", backup: pre, lease: a.Lease.ID, reason: vaultapi.ReasonNotTerminal, verified: true},
		{name: "edited backup, sha-256 recomputed", backup: vaulttest.Resum(flipped), lease: a.Lease.ID, reason: vaultapi.ReasonBackupCorrupt},
		{name: "edited backup, trailer kept", backup: flipped, lease: a.Lease.ID, reason: vaultapi.ReasonBackupCorrupt},
		{name: "corrupted map, backup re-signed", backup: vaulttest.Resign(flipped, mat.BackupKey), lease: a.Lease.ID,
			reason: vaultapi.ReasonNotTerminal, verified: true},
		{name: "another vault's backup", backup: otherBackup, lease: oa.Lease.ID, reason: vaultapi.ReasonBackupOtherKey},
		{name: "earlier format", backup: v1, lease: a.Lease.ID, reason: vaultapi.ReasonBackupFormat},
		{name: "key deleted, lease ACTIVE", backup: pre, lease: b.Lease.ID, reason: vaultapi.ReasonNotTerminal, verified: true,
			setup: func(t *testing.T) {
				if err := os.Remove(filepath.Join(e.keys, "dek", strings.TrimPrefix(b.Lease.ID, "pcl:")+".1")); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			rep := proveT(t, v, tc.backup, tc.lease, "")
			if rep.Proven || rep.Reason != tc.reason || rep.BackupVerified != tc.verified {
				t.Errorf("report: proven %v, verified %v, reason %q; want reason %q, verified %v (%+v)",
					rep.Proven, rep.BackupVerified, rep.Reason, tc.reason, tc.verified, rep.Destroyed)
			}
		})
	}
	// The corrupted map is reported as what it is: present, failing
	// authentication, with its key present.
	rep := proveT(t, v, vaulttest.Resign(flipped, mat.BackupKey), a.Lease.ID, "")
	if rep.Destroyed.Reason != reasonMapAuth || !rep.Destroyed.WrappedKey || rep.Destroyed.Decrypts {
		t.Errorf("corrupted map: %+v", rep.Destroyed)
	}
	// Revoked now, the same corrupted map still proves nothing about A's
	// erasure from the edited backup — but an intact backup does.
	if _, err := v.Revoke(ctx, principal, a.Lease.ID); err != nil {
		t.Fatal(err)
	}
	if rep := proveT(t, v, vaulttest.Resum(flipped), a.Lease.ID, ""); rep.Proven {
		t.Errorf("an edited backup proved erasure: %+v", rep)
	}
	if rep := proveT(t, v, pre, a.Lease.ID, ""); !rep.Proven {
		t.Errorf("the intact backup after revocation: %+v", rep)
	}
}

// blockingReader returns the first byte, then blocks until release is
// closed.
type blockingReader struct {
	first   bool
	started chan struct{}
	release chan struct{}
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if !r.first {
		r.first = true
		close(r.started)
		p[0] = 'p'
		return 1, nil
	}
	<-r.release
	return 0, io.EOF
}

// TestProveErasureLimit: one principal runs at most
// MaxScratchPerPrincipal proofs at once (LIMIT_EXCEEDED), another
// principal is not held back, and the slot is free again afterwards.
func TestProveErasureLimit(t *testing.T) {
	e := newEnv(t)
	e.opt.MaxScratchPerPrincipal = 1
	v := e.open(t)
	ps, _ := pairsOf("lim", 1)
	a := grant(t, v, ps)
	pre := backup(t, v)
	r := &blockingReader{started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := v.ProveErasure(principal, r, a.Lease.ID, "")
		done <- err
	}()
	<-r.started
	_, err := v.ProveErasure(principal, bytes.NewReader(pre), a.Lease.ID, "")
	wantCode(t, err, receipts.LimitExceeded)
	if e, ok := err.(*Error); !ok || e.Field != "scratch" || strings.Contains(err.Error(), a.Lease.Namespace) {
		t.Errorf("refusal %v", err)
	}
	if _, err := v.ProveErasure("uid:1000", bytes.NewReader(pre), a.Lease.ID, ""); err != nil {
		t.Errorf("another principal: %v", err)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Errorf("the held proof: %v", err)
	}
	if _, err := v.ProveErasure(principal, bytes.NewReader(pre), a.Lease.ID, ""); err != nil {
		t.Errorf("after the held proof ended: %v", err)
	}
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
	// An edited backup with its plain SHA-256 recomputed is refused, and
	// so is a backup of a vault with another key directory.
	flipped := bytes.Clone(b)
	flipped[len(flipped)/2] ^= 1
	_, err = v2.Restore(bytes.NewReader(vaulttest.Resum(flipped)))
	wantCode(t, err, receipts.MalformedRecord)
	v3 := newEnv(t).open(t)
	_, err = v3.Restore(bytes.NewReader(b))
	wantCode(t, err, receipts.MalformedRecord)
}
