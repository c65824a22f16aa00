package rpc

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestErrorTable round-trips every row of the table and checks that an
// unknown error becomes Internal without its message.
func TestErrorTable(t *testing.T) {
	for _, row := range errorTable {
		name := row.kind + "/" + string(row.code)
		t.Run(name, func(t *testing.T) {
			in := vaultapi.New(row.code, "op", "f", row.sentinel)
			st := ToStatus("op", in)
			if got := status.Code(st); got != row.grpc {
				t.Errorf("grpc code %v, want %v", got, row.grpc)
			}
			out := FromStatus("op", st)
			var e *vaultapi.Error
			if !errors.As(out, &e) || e.Code != row.code || e.Op != "op" {
				t.Fatalf("round trip: %#v", out)
			}
			if row.sentinel != nil && !errors.Is(out, row.sentinel) {
				t.Errorf("sentinel lost: %v", out)
			}
			if row.kind != "internal" && e.Field != "f" {
				t.Errorf("field %q, want f", e.Field)
			}
		})
	}
	secret := "VAULTD-CANARY-unknown-error"
	st := ToStatus("op", errors.New("disk exploded near "+secret))
	if status.Code(st) != codes.Internal || strings.Contains(st.Error(), secret) || !strings.Contains(st.Error(), internalMessage) {
		t.Errorf("unknown error: %v", st)
	}
	if !errors.Is(FromStatus("op", st), vaultapi.ErrInternal) {
		t.Errorf("unknown error did not come back as ErrInternal")
	}
	// A status without a Refusal detail (transport failure) is vaultapi.ErrUnavailable.
	if !errors.Is(FromStatus("op", status.Error(codes.Unavailable, "connection refused")), vaultapi.ErrUnavailable) {
		t.Errorf("transport failure is not vaultapi.ErrUnavailable")
	}
}

// TestReturnRefusalDetail: the detail is carried for return and schema
// refusals, and a detail outside its alphabet or bounds is dropped (the
// code remains).
func TestReturnRefusalDetail(t *testing.T) {
	ref := &receipts.Refusal{Code: receipts.TokenNotIssued, Part: -1, Kind: "return", Path: "$.a[3].b-c_d", Line: 2, Column: 7, Length: 52, Reason: "not exactly a token"}
	err := FromStatus("rehydrate", ToStatus("rehydrate", vaultapi.New(ref.Code, "rehydrate", "return", ref)))
	var got *receipts.Refusal
	if !errors.As(err, &got) || !cmp.Equal(ref, got) || vaultapi.CodeOf(err) != ref.Code {
		t.Errorf("refusal round trip: %v", err)
	}
	sch := &receipts.Refusal{Code: receipts.UnknownCategory, Part: -1, Kind: "schema", Line: 4, Column: 1, Length: 9, Reason: "unknown category"}
	err = FromStatus("rehydrate", ToStatus("rehydrate", vaultapi.New(sch.Code, "rehydrate", "schema", sch)))
	var gs *receipts.Refusal
	if !errors.As(err, &gs) || !cmp.Equal(sch, gs) {
		t.Errorf("schema error round trip: %v", err)
	}
	for _, ex := range []*receipts.Refusal{
		{Code: receipts.PlanMismatch, Part: 2, Kind: "export", Line: 3, Column: 41, Length: 39, Reason: "token not issued by this lease"},
		{Code: receipts.PlanMismatch, Part: -1, Kind: "export", Reason: "an issued token does not occur in the export"},
	} {
		err = FromStatus("bind", ToStatus("bind", vaultapi.New(ex.Code, "bind", "export", ex)))
		var ge *receipts.Refusal
		if !errors.As(err, &ge) || !cmp.Equal(ex, ge) {
			t.Errorf("export refusal round trip: %v", err)
		}
	}
	for _, rr := range []*vaultpb.ReturnRefusal{
		{Document: "return", Path: "$.a\"pcv:", Line: 1, Column: 1},
		{Document: "return", Path: "$.a", Part: 1},
		{Document: "export", Path: "$.a", Part: 1},
		{Document: "export", Part: -2},
		{Document: "export", Part: 1 << 40},
		{Document: "schema", Part: 3},
		{Document: "return", Path: "a", Line: 1, Column: 1},
		{Document: "return", Path: "$.a", Line: -1},
		{Document: "return", Path: "$.a", Reason: "VAULTD\n"},
		{Document: "return", Path: "$.a", Reason: strings.Repeat("x", 200)},
		{Document: "schema", Path: "$.a"},
		{Document: "other"},
	} {
		st, _ := status.New(codes.InvalidArgument, "x").WithDetails(
			&vaultpb.Refusal{Code: string(receipts.TokenNotIssued), Op: "rehydrate", Kind: "refusal"}, rr)
		err := FromStatus("rehydrate", st.Err())
		var e *vaultapi.Error
		if !errors.As(err, &e) || e.Code != receipts.TokenNotIssued || e.Err != nil {
			t.Errorf("detail %v: %#v, want the code alone", rr, err)
		}
	}
}

// TestStorageLowRoundTrip: the storage refusal keeps its code, its
// sentinel and the directory it names across the socket, and a plain
// LIMIT_EXCEEDED does not gain the storage sentinel.
func TestStorageLowRoundTrip(t *testing.T) {
	out := FromStatus("create", ToStatus("create", vaultapi.New(receipts.LimitExceeded, "create", "key_dir", vaultapi.ErrStorageLow)))
	if !errors.Is(out, vaultapi.ErrStorageLow) || vaultapi.CodeOf(out) != receipts.LimitExceeded {
		t.Fatalf("storage refusal round trip: %v", out)
	}
	if want := "vault: create (field key_dir): free space below the vault's floor (LIMIT_EXCEEDED)"; out.Error() != want {
		t.Errorf("text %q, want %q", out.Error(), want)
	}
	plain := FromStatus("create", ToStatus("create", vaultapi.New(receipts.LimitExceeded, "create", "values", nil)))
	if errors.Is(plain, vaultapi.ErrStorageLow) || vaultapi.CodeOf(plain) != receipts.LimitExceeded {
		t.Errorf("plain LIMIT_EXCEEDED round trip: %v", plain)
	}
}

// TestStorageFiguresRoundTrip: Status's storage figures survive the wire,
// and an error text that is not a short printable word is dropped.
func TestStorageFiguresRoundTrip(t *testing.T) {
	in := vaultapi.Storage{Floor: 64 << 20, Low: true,
		State: vaultapi.DirSpace{FreeBytes: 1 << 20, TotalBytes: 4 << 20, FreeInodes: 900, Low: true},
		Key:   vaultapi.DirSpace{FreeBytes: 9 << 30, TotalBytes: 10 << 30, FreeInodes: -1, Error: "EIO"}}
	if d := cmp.Diff(in, StorageFromPB(StorageToPB(in))); d != "" {
		t.Errorf("round trip (-in +out):\n%s", d)
	}
	bad := StorageToPB(in)
	bad.KeyDir.Error = "VAULTD-CANARY\nmore than a word, and longer than the bound"
	if got := StorageFromPB(bad).Key.Error; got != "" {
		t.Errorf("error text %q kept", got)
	}
	if d := cmp.Diff(vaultapi.Storage{}, StorageFromPB(nil)); d != "" {
		t.Errorf("nil storage: %s", d)
	}
}
