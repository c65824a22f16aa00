package receipts

import (
	"encoding/json"
	"fmt"
	"time"
)

// Schema names of the evidence types.
const (
	SchemaPlan           = "DisclosurePlan@1"
	SchemaTransformation = "TransformationReceipt@1"
	SchemaVerification   = "CutVerification@1"
	SchemaPrivacyCut     = "PrivacyCut@1"
	SchemaEgress         = "EgressDecision@1"
	SchemaRehydration    = "RehydrationReceipt@1"
	SchemaBundle         = "CutBundle@1"
	SchemaExport         = "Export@1"
	ProfileName          = "closed-diagnostic@1"
)

// Modes of a cut.
const (
	ModeIrreversible = "irreversible"
	ModeReversible   = "reversible"
)

// Verdicts of a CutVerification@1.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
)

// The claims of CutVerification@1 (docs/FORMATS.md), in the order they are
// always listed.
const (
	ClaimExportCanonical = "export-canonical"
	ClaimCoverage        = "coverage"
	ClaimPublicPreserved = "public-preserved"
	ClaimOwnersReplaced  = "owners-replaced"
	ClaimTokenConsistent = "token-consistency"
	ClaimNoResidual      = "no-residual"
	ClaimPlanMatch       = "plan-match"
	ClaimReceiptChain    = "receipt-chain"
	ClaimWireMatch       = "wire-match"
)

var claims = []string{
	ClaimExportCanonical, ClaimCoverage, ClaimPublicPreserved, ClaimOwnersReplaced,
	ClaimTokenConsistent, ClaimNoResidual, ClaimPlanMatch, ClaimReceiptChain,
	ClaimWireMatch,
}

// Claims returns the claim names in their fixed order. The slice is a copy.
func Claims() []string { return append([]string(nil), claims...) }

// Passed reports whether v is a pass verdict naming every claim, in order,
// each holding. It says nothing of where v came from.
func (v *Verification) Passed() bool {
	if v.Verdict != VerdictPass || len(v.Claims) != len(claims) {
		return false
	}
	for i, cl := range v.Claims {
		if cl.Name != claims[i] || !cl.OK {
			return false
		}
	}
	return true
}

// PolicyRevision is the policy this build enforces: a plan names it, and the
// censor, the verifier and the seal authority each require it.
const PolicyRevision = "privacycut-policy/1"

// RequiredInvariants are the invariants every plan must carry (docs/FORMATS.md#plan).
var RequiredInvariants = []string{
	"preserve-diagnostics", "preserve-dependencies", "preserve-status",
	"preserve-citations", "preserve-order", "owner-equality",
}

// Consumer names who receives a disclosure: kind and identity.
type Consumer struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

func (c Consumer) String() string { return c.Kind + ":" + c.ID }

// PlanCategories are the owner categories a plan allows and prohibits.
type PlanCategories struct {
	Allowed    []string `json:"allowed"`
	Prohibited []string `json:"prohibited"`
}

// Plan is a DisclosurePlan@1 (docs/FORMATS.md#plan). It never holds source bytes, keys,
// subjects or parent identities: the manifest and restricted ref are keyed
// digests.
type Plan struct {
	Schema           string         `json:"schema"`
	Consumer         Consumer       `json:"consumer"`
	Purpose          string         `json:"purpose"`
	Target           string         `json:"target"`
	Mode             string         `json:"mode"`
	ManifestDigest   string         `json:"manifest_digest"`
	RestrictedRef    string         `json:"restricted_ref"`
	Invariants       []string       `json:"invariants"`
	ThreatModel      string         `json:"threat_model"`
	Retention        string         `json:"retention"`
	MaxUses          int            `json:"max_uses"`
	Categories       PlanCategories `json:"categories"`
	VocabularyDigest string         `json:"vocabulary_digest"`
	MaxParents       int            `json:"max_parents"`
	ExpiresAt        string         `json:"expires_at"` // RFC 3339, UTC
	PolicyRevision   string         `json:"policy_revision"`

	// Reversible cuts only.
	RemoteDeadlineS    int    `json:"remote_deadline_s,omitempty"`
	ReturnWindowS      int    `json:"return_window_s,omitempty"`
	Station            string `json:"station,omitempty"`
	OutputSchemaDigest string `json:"output_schema_digest,omitempty"`

	// Wire is the provider request the export is sent as; nil is export@1.
	Wire *Wire `json:"wire,omitempty"`
	// RouteDigest is S(route) of the DisclosureRoute@1 the plan was made
	// from, "" for a plan made without a route.
	RouteDigest string `json:"route_digest,omitempty"`
}

// Wire profiles: the exact request body a cut is sent as.
const (
	WireExport            = "export@1"             // the export itself
	WireOpenAIChat        = "openai-chat@1"        // OpenAI Chat Completions
	WireAnthropicMessages = "anthropic-messages@1" // Anthropic Messages
)

// Wire is the wire profile of a plan or a route. Instruction is public text
// approved with the route; it is the only byte of a wire body that comes
// from neither the export nor the plan.
type Wire struct {
	Profile         string `json:"profile"`
	Model           string `json:"model,omitempty"`
	Instruction     string `json:"instruction,omitempty"`
	MaxOutputTokens int    `json:"max_output_tokens,omitempty"`
}

// WireProfile returns the plan's wire profile name, WireExport when the
// plan has none.
func (p *Plan) WireProfile() string {
	if p.Wire == nil {
		return WireExport
	}
	return p.Wire.Profile
}

// Retention profiles a plan may name: how long a rehydrated result may be
// kept (the maxima are rehydrate.RetentionMax's).
const (
	RetentionNone    = "no-retention"
	RetentionSession = "session"
	RetentionShort   = "short"
)

// KnownRetention reports whether name is one of the retention profiles.
func KnownRetention(name string) bool {
	return name == RetentionNone || name == RetentionSession || name == RetentionShort
}

// Expiry parses ExpiresAt.
func (p *Plan) Expiry() (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, p.ExpiresAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("receipts: plan: expires_at is not RFC 3339")
	}
	return t, nil
}

// Operation counts one typed operation of a stage on one category.
type Operation struct {
	Op       string `json:"op"`       // "replace-owner", "drop-metadata"
	Category string `json:"category"` // owner category, or "part" for metadata
	Count    int    `json:"count"`
}

// TransformationReceipt is TransformationReceipt@1: immutable evidence of one
// transforming stage. It holds digests, revisions and counts only: no spans,
// values, keys, subjects, file names or reversal data.
type TransformationReceipt struct {
	Schema           string      `json:"schema"`
	Stage            string      `json:"stage"`
	Revision         string      `json:"revision"`
	Index            int         `json:"index"`
	InputDigest      string      `json:"input_digest"`
	OutputDigest     string      `json:"output_digest"`
	PlanDigest       string      `json:"plan_digest"`
	VocabularyDigest string      `json:"vocabulary_digest"`
	LabelDigest      string      `json:"label_digest"`
	Parents          []string    `json:"parents"`
	Operations       []Operation `json:"operations"`
	Terminal         bool        `json:"terminal"`
	ExportDigest     string      `json:"export_digest,omitempty"` // terminal receipt only
}

// Digest returns the receipt's digest: SHA-256 of its canonical form.
func (r *TransformationReceipt) Digest() (string, error) { return DigestCanonical(r) }

// Claim is one named claim of a verification.
type Claim struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"` // content-free: counts, codes, positions
}

// Verification is CutVerification@1 (docs/FORMATS.md#verification).
type Verification struct {
	Schema           string  `json:"schema"`
	Verdict          string  `json:"verdict"` // "pass" | "fail"
	Claims           []Claim `json:"claims"`
	Verifier         string  `json:"verifier"` // revision of the verifier
	Mode             string  `json:"mode"`
	SourceDigest     string  `json:"source_digest"`
	ExportDigest     string  `json:"export_digest"`
	PlanDigest       string  `json:"plan_digest"`
	VocabularyDigest string  `json:"vocabulary_digest"`
	ReceiptsDigest   string  `json:"receipts_digest"` // digest of the terminal receipt
	// WireDigest is S(wire body) of the request the cut is sent as; for
	// export@1 the wire body is the export and this is ExportDigest.
	WireDigest string `json:"wire_digest,omitempty"`
}

// Failed returns the names of the failed claims.
func (v *Verification) Failed() []string {
	var out []string
	for _, c := range v.Claims {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// SealRef is the part of a seal that broadly visible evidence may carry.
type SealRef struct {
	EventID string `json:"event_id"`
}

// Bundle is CutBundle@1: what `cut prepare` emits.
type Bundle struct {
	Schema       string                  `json:"schema"`
	Export       json.RawMessage         `json:"export"`
	ExportDigest string                  `json:"export_digest"`
	Receipts     []TransformationReceipt `json:"receipts"`
	Verification Verification            `json:"verification"`
	Seal         *SealRef                `json:"seal"`
	Lease        *string                 `json:"lease"`
	LabelDigest  string                  `json:"label_digest"`
	// Wire profiles other than export@1: the wire body as sent, its
	// digest, and the output schema document it was rendered with.
	Wire         json.RawMessage `json:"wire,omitempty"`
	WireDigest   string          `json:"wire_digest,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// PrivacyCut is PrivacyCut@1: a seal, held in one process's memory.
type PrivacyCut struct {
	Schema             string   `json:"schema"`
	EventID            string   `json:"event_id"`
	SourceDigest       string   `json:"source_digest"`
	ExportDigest       string   `json:"export_digest"`
	WireDigest         string   `json:"wire_digest,omitempty"`
	PlanDigest         string   `json:"plan_digest"`
	ReceiptsDigest     string   `json:"receipts_digest"`
	VerificationDigest string   `json:"verification_digest"`
	Verdict            string   `json:"verdict"`
	PolicyRevision     string   `json:"policy_revision"`
	Target             string   `json:"target"`
	Consumer           Consumer `json:"consumer"`
	MaxUses            int      `json:"max_uses"`
	ExpiresAt          string   `json:"expires_at"`
	SealedAt           string   `json:"sealed_at"`
	Lease              string   `json:"lease,omitempty"`
}

// EgressDecision is EgressDecision@1: one admission or refusal at the gate.
type EgressDecision struct {
	Schema     string   `json:"schema"`
	EventID    string   `json:"event_id"` // this decision's own id
	Seal       string   `json:"seal"`     // the seal's event id ("" if none was found)
	Admit      bool     `json:"admit"`
	Code       Code     `json:"code,omitempty"`
	Reason     string   `json:"reason,omitempty"` // content-free
	Target     string   `json:"target"`
	Consumer   Consumer `json:"consumer"`
	BodyDigest string   `json:"body_digest"`
	Use        int      `json:"use"`      // 1-based number of this admission (0 when refused)
	MaxUses    int      `json:"max_uses"` // the seal's ceiling
	DecidedAt  string   `json:"decided_at"`
}

// RehydrationReceipt is RehydrationReceipt@1 (docs/FORMATS.md#rehydration).
type RehydrationReceipt struct {
	Schema           string         `json:"schema"`
	CutEvent         string         `json:"cut_event"`
	Lease            string         `json:"lease"`
	ReturnDigest     string         `json:"return_digest"`
	FinalDigest      string         `json:"final_digest"`
	Substitutions    map[string]int `json:"substitutions"` // per category
	VerifierRevision string         `json:"verifier_revision"`
	PolicyRevision   string         `json:"policy_revision"`
	LabelDigest      string         `json:"label_digest"`
	PurgeAt          string         `json:"purge_at"`
	RehydratedAt     string         `json:"rehydrated_at"`
}
