package rpc

import (
	"context"
	"errors"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// errorRow is one line of the error table: an error class, matched by its
// refusal code or by its sentinel, and its gRPC status code.
type errorRow struct {
	kind     string
	code     receipts.Code // refusal rows
	sentinel error         // sentinel rows
	grpc     codes.Code
}

// errorTable is the one mapping between vault errors and gRPC status
// codes, used in both directions: the server maps an error to a status
// carrying a Refusal detail, the client maps the detail back to a
// *vaultapi.Error with the same Code and sentinel. An error that matches no
// row is Internal with a generic message.
var errorTable = []errorRow{
	{kind: "refusal", code: receipts.VaultProfileNotProven, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.LeaseDurabilityInsufficient, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.LeaseNotActive, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.PlanMismatch, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.LeaseClaimConflict, grpc: codes.Aborted},
	{kind: "refusal", code: receipts.LeaseUnrecoverable, grpc: codes.DataLoss},
	{kind: "storage_low", code: receipts.LimitExceeded, sentinel: vaultapi.ErrStorageLow, grpc: codes.ResourceExhausted},
	{kind: "refusal", code: receipts.LimitExceeded, grpc: codes.ResourceExhausted},
	{kind: "refusal", code: receipts.MalformedRecord, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.InvalidUTF8, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.UnknownCategory, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.ProhibitedCategory, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenNotIssued, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenOtherNamespace, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenWrongCategory, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenWrongPath, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenOverCardinality, grpc: codes.InvalidArgument},
	{kind: "not_found", sentinel: vaultapi.ErrNotFound, grpc: codes.NotFound},
	{kind: "invalid", sentinel: vaultapi.ErrInvalid, grpc: codes.InvalidArgument},
	{kind: "forbidden", sentinel: vaultapi.ErrForbidden, grpc: codes.PermissionDenied},
	{kind: "stale_key", sentinel: vaultapi.ErrStaleKey, grpc: codes.FailedPrecondition},
	{kind: "closed", sentinel: vaultapi.ErrClosed, grpc: codes.Unavailable},
	{kind: "storage_failed", sentinel: vaultapi.ErrStorageFailed, grpc: codes.Unavailable},
	{kind: "peer", sentinel: vaultapi.ErrPeerRejected, grpc: codes.PermissionDenied},
	{kind: "canceled", sentinel: context.Canceled, grpc: codes.Canceled},
	{kind: "deadline", sentinel: context.DeadlineExceeded, grpc: codes.DeadlineExceeded},
	{kind: "internal", sentinel: vaultapi.ErrInternal, grpc: codes.Internal},
}

// internalMessage is what an unknown error becomes on the wire.
const internalMessage = "vault: internal error"

// rowFor finds the row of an error: by refusal code first (a row that
// also names a sentinel only when the error carries it), then by sentinel.
func rowFor(e *vaultapi.Error) (errorRow, bool) {
	for _, r := range errorTable {
		if r.code != "" && r.code == e.Code && (r.sentinel == nil || errors.Is(e.Err, r.sentinel)) {
			return r, true
		}
	}
	if e.Code != "" {
		return errorRow{}, false
	}
	for _, r := range errorTable {
		if r.sentinel != nil && errors.Is(e.Err, r.sentinel) {
			return r, true
		}
	}
	return errorRow{}, false
}

// ToStatus is the server side of the table. The status message is the
// error's own text (which by construction holds no value); anything that
// is not a *vaultapi.Error, or matches no row, is Internal with a generic
// message.
func ToStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *vaultapi.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			e = vaultapi.Fail(op, err)
		} else {
			e = vaultapi.Fail(op, vaultapi.ErrInternal)
		}
	}
	row, ok := rowFor(e)
	msg := e.Error()
	if !ok || row.kind == "internal" {
		row = errorRow{kind: "internal", grpc: codes.Internal}
		msg = internalMessage
		e = vaultapi.New("", e.Op, "", nil)
	}
	st := status.New(row.grpc, msg)
	details := []protoadapt.MessageV1{&vaultpb.Refusal{Code: string(e.Code), Op: e.Op, Field: e.Field, Kind: row.kind}}
	if rr := returnRefusal(e); rr != nil {
		details = append(details, rr)
	}
	if d, derr := st.WithDetails(details...); derr == nil {
		st = d
	}
	return st.Err()
}

// returnRefusal is the ReturnRefusal detail of a rehydration's refusal of
// the return or the schema, or of a bind's refusal of the export: path or
// part, positions and a fixed reason.
func returnRefusal(e *vaultapi.Error) *vaultpb.ReturnRefusal {
	if e.Code == "" {
		return nil
	}
	var r *receipts.Refusal
	if !errors.As(e.Err, &r) {
		return nil
	}
	switch r.Kind {
	case "return":
		return &vaultpb.ReturnRefusal{Document: "return", Path: r.Path, Line: int64(r.Line),
			Column: int64(r.Column), Length: int64(r.Length), Reason: r.Reason}
	case "schema":
		return &vaultpb.ReturnRefusal{Document: "schema", Line: int64(r.Line),
			Column: int64(r.Column), Length: int64(r.Length), Reason: r.Reason}
	case "export":
		return &vaultpb.ReturnRefusal{Document: "export", Part: int64(r.Part), Line: int64(r.Line),
			Column: int64(r.Column), Length: int64(r.Length), Reason: r.Reason}
	}
	return nil
}

// Bounds on a ReturnRefusal detail the client accepts.
const (
	maxDetailPath   = 4096
	maxDetailReason = 128
	maxDetailPos    = 1 << 31
)

// refusalOf rebuilds the *receipts.Refusal (of the return, the schema or the
// export) of a ReturnRefusal detail with its code. A detail that does not
// look like one (unknown document, a path or reason outside its alphabet or
// bound, a negative or huge position or part) is dropped: the code alone
// remains.
func refusalOf(code receipts.Code, rr *vaultpb.ReturnRefusal) error {
	pos := func(n int64) bool { return n >= 0 && n < maxDetailPos }
	if !pos(rr.Line) || !pos(rr.Column) || !pos(rr.Length) || !printable(rr.Reason, maxDetailReason) {
		return nil
	}
	line, col, n := int(rr.Line), int(rr.Column), int(rr.Length)
	switch rr.Document {
	case "return":
		if !jsonPath(rr.Path) || rr.Part != 0 {
			return nil
		}
		return &receipts.Refusal{Code: code, Part: -1, Kind: "return", Path: rr.Path, Line: line, Column: col, Length: n, Reason: rr.Reason}
	case "schema":
		if rr.Path != "" || rr.Part != 0 {
			return nil
		}
		return &receipts.Refusal{Code: code, Part: -1, Kind: "schema", Line: line, Column: col, Length: n, Reason: rr.Reason}
	case "export":
		if rr.Path != "" || rr.Part < -1 || rr.Part >= maxDetailPos {
			return nil
		}
		return &receipts.Refusal{Code: code, Part: int(rr.Part), Kind: "export", Line: line, Column: col, Length: n, Reason: rr.Reason}
	}
	return nil
}

// printable accepts at most max bytes of printable ASCII.
func printable(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// jsonPath accepts "" or a path as package rehydrate writes it: "$", then
// ".name" (declared property names, [A-Za-z0-9_-]) and "[n]".
func jsonPath(p string) bool {
	if p == "" {
		return true
	}
	if len(p) > maxDetailPath || p[0] != '$' {
		return false
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// FromStatus is the client side: it rebuilds a *vaultapi.Error from the
// status' Refusal detail. A status without one (the transport failed, the
// connection was refused) becomes vaultapi.ErrUnavailable, PermissionDenied
// vaultapi.ErrPeerRejected.
func FromStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return vaultapi.Fail(op, vaultapi.ErrUnavailable)
	}
	var ref *vaultpb.Refusal
	var rr *vaultpb.ReturnRefusal
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *vaultpb.Refusal:
			if ref == nil {
				ref = d
			}
		case *vaultpb.ReturnRefusal:
			if rr == nil {
				rr = d
			}
		}
	}
	if ref != nil {
		e := vaultapi.New(receipts.Code(ref.Code), ref.Op, ref.Field, nil)
		if e.Code != "" && !e.Code.Valid() {
			return vaultapi.Fail(op, vaultapi.ErrInternal)
		}
		if e.Code != "" && rr != nil {
			e.Err = refusalOf(e.Code, rr)
		}
		if e.Code != "" && e.Err == nil {
			// A refusal row that names its sentinel (storage_low).
			for _, r := range errorTable {
				if r.kind == ref.Kind && r.code == e.Code && r.sentinel != nil {
					e.Err = r.sentinel
					break
				}
			}
		}
		if e.Code == "" {
			e.Err = vaultapi.ErrInternal
			for _, r := range errorTable {
				if r.kind == ref.Kind && r.sentinel != nil {
					e.Err = r.sentinel
					break
				}
			}
		}
		return e
	}
	switch st.Code() {
	case codes.PermissionDenied:
		return vaultapi.Fail(op, vaultapi.ErrPeerRejected)
	case codes.Canceled:
		return vaultapi.Fail(op, context.Canceled)
	case codes.DeadlineExceeded:
		return vaultapi.Fail(op, context.DeadlineExceeded)
	}
	return vaultapi.Fail(op, vaultapi.ErrUnavailable)
}
