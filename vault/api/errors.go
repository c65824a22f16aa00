package api

import (
	"context"
	"errors"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/service"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrUnavailable: the vault could not be reached, or the connection broke.
var ErrUnavailable = errors.New("api: vault unavailable")

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
// *service.Error with the same Code and sentinel. An error that matches no
// row is Internal with a generic message.
var errorTable = []errorRow{
	{kind: "refusal", code: receipts.VaultProfileNotProven, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.LeaseDurabilityInsufficient, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.LeaseNotActive, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.PlanMismatch, grpc: codes.FailedPrecondition},
	{kind: "refusal", code: receipts.LeaseClaimConflict, grpc: codes.Aborted},
	{kind: "refusal", code: receipts.LeaseUnrecoverable, grpc: codes.DataLoss},
	{kind: "refusal", code: receipts.LimitExceeded, grpc: codes.ResourceExhausted},
	{kind: "refusal", code: receipts.MalformedRecord, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.UnknownCategory, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.ProhibitedCategory, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenNotIssued, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenOtherNamespace, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenWrongCategory, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenWrongPath, grpc: codes.InvalidArgument},
	{kind: "refusal", code: receipts.TokenOverCardinality, grpc: codes.InvalidArgument},
	{kind: "not_found", sentinel: service.ErrNotFound, grpc: codes.NotFound},
	{kind: "invalid", sentinel: service.ErrInvalid, grpc: codes.InvalidArgument},
	{kind: "forbidden", sentinel: service.ErrForbidden, grpc: codes.PermissionDenied},
	{kind: "stale_key", sentinel: service.ErrStaleKey, grpc: codes.FailedPrecondition},
	{kind: "closed", sentinel: service.ErrClosed, grpc: codes.Unavailable},
	{kind: "peer", sentinel: ErrPeerRejected, grpc: codes.PermissionDenied},
	{kind: "canceled", sentinel: context.Canceled, grpc: codes.Canceled},
	{kind: "deadline", sentinel: context.DeadlineExceeded, grpc: codes.DeadlineExceeded},
	{kind: "internal", sentinel: service.ErrInternal, grpc: codes.Internal},
}

// internalMessage is what an unknown error becomes on the wire.
const internalMessage = "vault: internal error"

// rowFor finds the row of an error: by refusal code first, then by
// sentinel.
func rowFor(e *service.Error) (errorRow, bool) {
	for _, r := range errorTable {
		if r.code != "" && r.code == e.Code {
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

// toStatus is the server side of the table. The status message is the
// error's own text (which by construction holds no value); anything that
// is not a *service.Error, or matches no row, is Internal with a generic
// message.
func toStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *service.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			e = &service.Error{Op: op, Err: err}
		} else {
			e = &service.Error{Op: op, Err: service.ErrInternal}
		}
	}
	row, ok := rowFor(e)
	msg := e.Error()
	if !ok || row.kind == "internal" {
		row = errorRow{kind: "internal", grpc: codes.Internal}
		msg = internalMessage
		e = &service.Error{Op: e.Op}
	}
	st := status.New(row.grpc, msg)
	if d, derr := st.WithDetails(&vaultpb.Refusal{Code: string(e.Code), Op: e.Op, Field: e.Field, Kind: row.kind}); derr == nil {
		st = d
	}
	return st.Err()
}

// fromStatus is the client side: it rebuilds a *service.Error from the
// status' Refusal detail. A status without one (the transport failed, the
// connection was refused) becomes ErrUnavailable, PermissionDenied
// ErrPeerRejected.
func fromStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return &service.Error{Op: op, Err: ErrUnavailable}
	}
	for _, d := range st.Details() {
		ref, ok := d.(*vaultpb.Refusal)
		if !ok {
			continue
		}
		e := &service.Error{Code: receipts.Code(ref.Code), Op: ref.Op, Field: ref.Field}
		if e.Code != "" && !e.Code.Valid() {
			return &service.Error{Op: op, Err: service.ErrInternal}
		}
		if e.Code == "" {
			e.Err = service.ErrInternal
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
		return &service.Error{Op: op, Err: ErrPeerRejected}
	case codes.Canceled:
		return &service.Error{Op: op, Err: context.Canceled}
	case codes.DeadlineExceeded:
		return &service.Error{Op: op, Err: context.DeadlineExceeded}
	}
	return &service.Error{Op: op, Err: ErrUnavailable}
}
