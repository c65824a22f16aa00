package service

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"syscall"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// TestWatermarkRefusesGrantsOnly: below the floor a grant, a rotation and a
// restore are refused LIMIT_EXCEEDED with ErrStorageLow naming the
// directory, while the claim, consume and revocation of leases granted
// before, and Status, keep working; Status reports the floor.
func TestWatermarkRefusesGrantsOnly(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	pairs, vals := pairsOf("space", 2)
	a := grant(t, v, pairs)
	bind(t, v, a)
	b := grant(t, v, pairs)
	var backup bytes.Buffer
	if _, err := v.Backup(&backup); err != nil {
		t.Fatal(err)
	}
	if s := v.Storage(); s.Low || s.Floor != 0 {
		t.Fatalf("storage without a floor: %+v", s)
	}

	v.opt.MinFree = 1 << 62 // more than any file system has
	st, err := v.Status()
	if err != nil {
		t.Fatalf("Status below the floor: %v", err)
	}
	if s := st.Storage; !s.Low || !s.State.Low || !s.Key.Low || s.Floor != 1<<62 || s.State.TotalBytes <= 0 || s.State.FreeBytes < 0 {
		t.Errorf("Status storage below the floor: %+v", s)
	}
	_, err = v.CreateLease(ctx, principal, request(t, v, pairs))
	wantStorageLow(t, err, "state_dir", vals)
	_, err = v.Rotate()
	wantStorageLow(t, err, "state_dir", vals)
	_, err = v.Restore(bytes.NewReader(backup.Bytes()))
	wantStorageLow(t, err, "state_dir", vals)

	ret := digest("sha256:")
	if _, err := v.Claim(ctx, principal, a.Lease.ID, claimReq(ret)); err != nil {
		t.Errorf("claim below the floor: %v", err)
	}
	if l, err := v.Consume(ctx, principal, a.Lease.ID, claimReq(ret)); err != nil || l.State != lease.Consumed {
		t.Errorf("consume below the floor: %v %v", l.State, err)
	}
	if l, err := v.Revoke(ctx, principal, b.Lease.ID); err != nil || l.State != lease.Revoked {
		t.Errorf("revoke below the floor: %v %v", l.State, err)
	}
	if _, err := v.List(ctx); err != nil {
		t.Errorf("list below the floor: %v", err)
	}
	v.opt.MinFree = 0 // Close flushes normally
}

// TestWatermarkNamesKeyDir: the key directory below the floor (the state
// directory above it) is named.
func TestWatermarkNamesKeyDir(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	pairs, vals := pairsOf("space-key", 1)
	free := dirSpace(e.state, 1).FreeBytes
	// A floor the state directory's file system passes and the key
	// directory's cannot: point the key directory's check at a tiny one.
	v.opt.MinFree = 1
	v.opt.KeyDir = filepath.Join(e.keys, "missing") // statfs fails: counted below the floor
	_, err := v.CreateLease(ctx, principal, request(t, v, pairs))
	wantStorageLow(t, err, "key_dir", vals)
	if s := v.Storage(); s.State.Low || !s.Key.Low || s.Key.Error != "ENOENT" || s.State.FreeBytes <= 0 {
		t.Errorf("storage: %+v (state free %d)", s, free)
	}
	v.opt.KeyDir, v.opt.MinFree = e.keys, 0
	if _, err := v.CreateLease(ctx, principal, request(t, v, pairs)); err != nil {
		t.Errorf("grant above the floor: %v", err)
	}
}

func wantStorageLow(t *testing.T, err error, dir string, vals [][]byte) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != receipts.LimitExceeded || !errors.Is(err, vaultapi.ErrStorageLow) || e.Field != dir {
		t.Fatalf("got %v, want LIMIT_EXCEEDED / ErrStorageLow naming %s", err, dir)
	}
	for _, v := range vals {
		if strings.Contains(err.Error(), string(v)) {
			t.Errorf("refusal echoes a value: %v", err)
		}
	}
}

// TestStorageClass: errors from below that are about the disk become the
// storage refusal or ErrStorageFailed; the failure is reported on Fatal,
// once.
func TestStorageClass(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	full := &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	for _, tc := range []struct {
		name    string
		err     error
		code    receipts.Code
		want    error
		fatal   bool
		handled bool
	}{
		{"enospc", full, receipts.LimitExceeded, vaultapi.ErrStorageLow, false, true},
		{"gone", errors.Join(store.ErrGone), "", vaultapi.ErrStorageFailed, true, true},
		{"plain", errors.New("other"), "", nil, false, false},
	} {
		got, ok := v.storageClass("create", tc.err)
		if ok != tc.handled {
			t.Errorf("%s: handled %v, want %v", tc.name, ok, tc.handled)
			continue
		}
		if !ok {
			continue
		}
		if got.Code != tc.code || !errors.Is(got, tc.want) {
			t.Errorf("%s: %v, want code %q and %v", tc.name, got, tc.code, tc.want)
		}
	}
	select {
	case err := <-v.Fatal():
		if !errors.Is(err, store.ErrGone) {
			t.Errorf("Fatal delivered %v", err)
		}
	default:
		t.Error("a vanished state directory was not reported on Fatal")
	}
	v.fault(errors.New("second"))
	select {
	case err := <-v.Fatal():
		t.Errorf("Fatal delivered a second failure: %v", err)
	default:
	}
}

// TestCloseAbandonsBelowFloor: a Close below the floor does not flush the
// memtable; it reports the store as not closed, naming why.
func TestCloseAbandonsBelowFloor(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	pairs, _ := pairsOf("abandon", 1)
	grant(t, v, pairs)
	v.opt.MinFree = 1 << 62
	err := v.Close()
	var ue *UnclosedError
	if !errors.As(err, &ue) || ue.Part != "store" || !strings.Contains(ue.Error(), "below the floor") {
		t.Fatalf("Close below the floor: %v, want the store not closed", err)
	}
	if v.Closing() != "closed" {
		t.Errorf("Closing after Close: %q", v.Closing())
	}
	if pending, err := store.PendingLog(e.state); err != nil || !pending {
		t.Errorf("no write-ahead log left to replay (%v)", err)
	}
	// Reopening below the floor with a log to replay is refused.
	opt := e.opt
	opt.MinFree = 1 << 62
	if _, err := Open(opt); !errors.Is(err, vaultapi.ErrStorageLow) || vaultapi.CodeOf(err) != receipts.LimitExceeded {
		t.Errorf("Open below the floor with a log to replay: %v", err)
	}
}

// TestRehydrateBelowFloor: a lease granted above the floor is rehydrated
// below it.
func TestRehydrateBelowFloor(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	l := grantRH(t, v, rhPairs())
	ek := evidence(t)
	ret := l.honest().bytes(t)
	req := rhReq(t, v, l.res.Lease.ID, ret, ek)
	v.opt.MinFree = 1 << 62
	defer func() { v.opt.MinFree = 0 }()
	res, err := v.Rehydrate(ctx, principal, req)
	if err != nil {
		t.Fatalf("Rehydrate below the floor: %v", err)
	}
	if want := l.restored().bytes(t); !bytes.Equal(res.Output, want) {
		t.Errorf("output below the floor:\n%s\nwant:\n%s", res.Output, want)
	}
}
