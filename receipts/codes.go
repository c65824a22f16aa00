package receipts

// Code is a refusal code: the closed set of reasons privacycut refuses an input,
// a cut, a lease operation or a rehydration (docs/FORMATS.md#codes). A Code is public
// information; it never carries input bytes.
type Code string

// The closed set of refusal codes. The order is the order of docs/FORMATS.md#codes.
// The vault's disk below its free-space floor is LimitExceeded: the vault's
// error names the directory, and the set gains no code for it.
const (
	UncoveredText               Code = "UNCOVERED_TEXT"
	MalformedRecord             Code = "MALFORMED_RECORD"
	UnknownDiagnostic           Code = "UNKNOWN_DIAGNOSTIC"
	UnknownModule               Code = "UNKNOWN_MODULE"
	UnknownVersion              Code = "UNKNOWN_VERSION"
	UnknownStatus               Code = "UNKNOWN_STATUS"
	UnknownCitation             Code = "UNKNOWN_CITATION"
	UnknownQuestion             Code = "UNKNOWN_QUESTION"
	UnknownCategory             Code = "UNKNOWN_CATEGORY"
	ProhibitedCategory          Code = "PROHIBITED_CATEGORY"
	AmbiguousSpan               Code = "AMBIGUOUS_SPAN"
	InvalidUTF8                 Code = "INVALID_UTF8"
	UnknownLineage              Code = "UNKNOWN_LINEAGE"
	ExcessAncestry              Code = "EXCESS_ANCESTRY"
	LostUtility                 Code = "LOST_UTILITY"
	PlanMismatch                Code = "PLAN_MISMATCH"
	LimitExceeded               Code = "LIMIT_EXCEEDED"
	VaultProfileNotProven       Code = "VAULT_PROFILE_NOT_PROVEN"
	LeaseDurabilityInsufficient Code = "LEASE_DURABILITY_INSUFFICIENT"
	TokenNotIssued              Code = "TOKEN_NOT_ISSUED"
	TokenOtherNamespace         Code = "TOKEN_OTHER_NAMESPACE"
	TokenWrongCategory          Code = "TOKEN_WRONG_CATEGORY"
	TokenWrongPath              Code = "TOKEN_WRONG_PATH"
	TokenOverCardinality        Code = "TOKEN_OVER_CARDINALITY"
	LeaseNotActive              Code = "LEASE_NOT_ACTIVE"
	LeaseClaimConflict          Code = "LEASE_CLAIM_CONFLICT"
	LeaseUnrecoverable          Code = "LEASE_UNRECOVERABLE"
	// UpstreamFailed: the provider's answer was not a usable answer (an
	// error status other than 429, a refusal, a truncation, no answer of
	// the profile's shape) or redelivery ran out of uses or time.
	UpstreamFailed Code = "UPSTREAM_FAILED"
)

var allCodes = []Code{
	UncoveredText, MalformedRecord, UnknownDiagnostic, UnknownModule, UnknownVersion,
	UnknownStatus, UnknownCitation, UnknownQuestion, UnknownCategory, ProhibitedCategory,
	AmbiguousSpan, InvalidUTF8, UnknownLineage, ExcessAncestry, LostUtility, PlanMismatch,
	LimitExceeded, VaultProfileNotProven, LeaseDurabilityInsufficient, TokenNotIssued,
	TokenOtherNamespace, TokenWrongCategory, TokenWrongPath, TokenOverCardinality,
	LeaseNotActive, LeaseClaimConflict, LeaseUnrecoverable, UpstreamFailed,
}

// Codes returns every refusal code, in the order of docs/FORMATS.md#codes. The slice is a copy.
func Codes() []Code { return append([]Code(nil), allCodes...) }

// Valid reports whether c is one of the closed set of refusal codes.
func (c Code) Valid() bool {
	for _, k := range allCodes {
		if k == c {
			return true
		}
	}
	return false
}

func (c Code) String() string { return string(c) }
