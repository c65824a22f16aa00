package vaultapi

import (
	"errors"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
)

// CreateRequest asks for a new lease over sealed (category, value) pairs.
type CreateRequest struct {
	Run             string
	Attempt         uint32
	Target          string
	Purpose         string
	SourceDigest    string // "hmac-sha256:<hex>" of the source projection
	Station         string // "" means the vault's station; another station is PLAN_MISMATCH
	RemoteDeadlineS uint64 // the plan's remote_deadline_s
	ReturnWindowS   uint64 // the plan's return_window_s
	Lifetime        time.Duration
	Values          seal.Request // distinct pairs, sealed to Status.SealKey
	// OutputSchemaDigest is the plan's output_schema_digest ("sha256:…"),
	// bound into the lease: Rehydrate accepts only a schema of this
	// digest. A lease granted without one accepts none.
	OutputSchemaDigest string
}

// CreateResult is a granted lease and its tokens, in request order.
type CreateResult struct {
	Lease  lease.Lease
	Tokens []string
}

// ClaimRequest is the claim tuple apart from the principal, which the
// vault takes from the connection.
type ClaimRequest struct {
	Run          string
	Attempt      uint32
	Station      string
	ReturnDigest string
}

// KeyState says whether a lease's wrapped data key exists.
type KeyState string

// Key states.
const (
	KeyPresent   KeyState = "present"   // a wrapped key exists under the current epoch
	KeyMissing   KeyState = "missing"   // a live lease without a key: unrecoverable
	KeyDestroyed KeyState = "destroyed" // the key was destroyed (terminal lease)
)

// Info is a lease as List and Show report it: public metadata only, never
// map material.
type Info struct {
	Lease lease.Lease `json:"lease"`
	Key   KeyState    `json:"key"`
}

// ClaimResult is the result of a claim.
type ClaimResult struct {
	Lease lease.Lease
	// Repeated reports an idempotent repeat of the winning claim.
	Repeated bool
}

// EvidenceKeyCategory is the category of the one sealed value that carries
// a cut's evidence key to Rehydrate (see SealEvidenceKey).
const EvidenceKeyCategory = "evidence-key"

// RehydrateRequest asks the vault to rehydrate a return of a reversible cut
// with the lease's map. Everything in it is public or sealed: the return
// holds tokens, never values.
type RehydrateRequest struct {
	// Lease is the lease reference, "pcl:…".
	Lease string
	// Claim is the claim tuple apart from the principal. Its ReturnDigest
	// must be receipts.SHA256(Return).
	Claim ClaimRequest
	// Schema is the output schema document (rehydrate.ParseSchema). Its
	// digest must be the output_schema_digest the lease was granted with
	// (PLAN_MISMATCH otherwise, and for a lease granted without one).
	Schema []byte
	// Return is the quarantined answer, exactly as received.
	Return []byte
	// CutExpiry is the plan's expires_at.
	CutExpiry time.Time
	// Retention is the plan's retention profile (rehydrate.RetentionMax).
	Retention string
	// PolicyRevision is the plan's policy revision.
	PolicyRevision string
	// VerifierRevision is the revision of the cut's CutVerification@1.
	VerifierRevision string
	// LabelDigest is the cut's label digest, "hmac-sha256:…": the label the
	// rehydrated result keeps.
	LabelDigest string
	// EvidenceKey is the cut's 32-byte evidence key, sealed to the vault as
	// one value of category EvidenceKeyCategory (SealEvidenceKey). The
	// receipt's final_digest is keyed under it.
	EvidenceKey seal.Request
}

// RehydrateResult is a rehydrated return.
type RehydrateResult struct {
	// Output is the RFC 8785 canonical JSON of the return with every
	// substitution made: it holds restored owner values, in ordinary heap
	// memory. It keeps the cut's label, must never be admitted by egress,
	// and the caller must clear it after use (package vault/server seals it
	// to the client piece by piece and clears each piece once sealed).
	Output receipts.Plaintext
	// Receipt is the RehydrationReceipt@1; its final_digest is keyed.
	Receipt receipts.RehydrationReceipt
	// Lease is the lease after the rehydration: CONSUMED, its key destroyed
	// (KeyDestroyed false only if the destruction failed and is pending).
	Lease lease.Lease
}

// SealEvidenceKey seals a cut's evidence key to the vault's public key
// recipient (Status.SealKey) as the one value of category
// EvidenceKeyCategory: the form RehydrateRequest.EvidenceKey takes. It runs
// on the client side; the key's bytes are read through its Reveal and are
// not copied.
func SealEvidenceKey(recipient [seal.KeySize]byte, key *receipts.EvidenceKey) (seal.Request, error) {
	const op = "seal-evidence-key"
	if key == nil {
		return seal.Request{}, Invalid(op, "evidence_key")
	}
	var req seal.Request
	err := key.Reveal(func(k []byte) error {
		var err error
		req, err = seal.Seal(recipient, []seal.Pair{{Category: EvidenceKeyCategory, Value: k}})
		return err
	})
	if errors.Is(err, receipts.ErrKeyWiped) {
		return seal.Request{}, Invalid(op, "evidence_key")
	}
	if err != nil {
		var se *seal.Error
		if errors.As(err, &se) && errors.Is(se.Err, seal.ErrKey) {
			return seal.Request{}, New("", op, "recipient", ErrStaleKey)
		}
		return seal.Request{}, Invalid(op, "evidence_key")
	}
	return req, nil
}

// Status is what Status reports: the profile and the public facts a client
// needs.
type Status struct {
	Profile    harden.Profile
	SealKey    [seal.KeySize]byte // X25519 public key to seal values to (zero without an arena)
	Station    string
	Epoch      uint64
	MaxLease   time.Duration
	Leases     map[string]int // count per state name
	ArenaError string         // why there is no arena, "" when there is one
	Storage    Storage        // free space of the state and key directories against the floor
}

// ErasureSchema names a Report.
const ErasureSchema = "ErasureProof@1"

// Probe is what the erasure proof found for one lease of the backup.
type Probe struct {
	Lease       string        `json:"lease"`
	InBackup    bool          `json:"in_backup"`
	State       string        `json:"state,omitempty"` // state recorded in the backup
	MapInBackup bool          `json:"map_in_backup"`
	Decrypts    bool          `json:"decrypts"`
	Entries     int           `json:"entries"`        // map entries, when it decrypts
	Code        receipts.Code `json:"code,omitempty"` // LEASE_UNRECOVERABLE when it does not
	Reason      string        `json:"reason,omitempty"`
	// VaultState is the lease's state in the vault's own store, "" when
	// the vault holds no such lease.
	VaultState string `json:"vault_state,omitempty"`
	// WrappedKey reports whether the vault's key directory still holds a
	// wrapped data key for the lease.
	WrappedKey bool `json:"wrapped_key"`
}

// Report is the result of an erasure proof: verify a backup, restore it
// into a scratch store and try to decrypt two leases' maps with the
// current key directory.
type Report struct {
	Schema    string `json:"schema"` // ErasureProof@1
	Epoch     uint64 `json:"epoch"`  // the key epoch the proof used
	Destroyed Probe  `json:"destroyed"`
	Live      *Probe `json:"live"`
	// Proven: erasure of the destroyed lease is shown by absence. The
	// backup passed its keyed integrity check; it holds the lease's map;
	// the lease is terminal in the vault's store; its wrapped data key is
	// gone from the key directory; and the map does not open for that
	// reason (no wrapped data key). The live lease, when given, decrypts.
	// A map that fails authentication proves nothing (damage is not
	// erasure), nor does a backup without the map.
	Proven bool `json:"proven"`
	// BackupVerified reports that the backup passed its integrity check:
	// it names this vault's backup key and its HMAC trailer verifies.
	BackupVerified bool `json:"backup_verified"`
	// Reason says why erasure is not proven (one of the Reason constants,
	// the first that applies in their order); "" when it is.
	Reason string `json:"reason,omitempty"`
}

// Why a Report does not prove erasure, in the order they are checked.
const (
	ReasonBackupCorrupt  = "backup integrity check failed"
	ReasonBackupOtherKey = "backup made under another backup key"
	ReasonBackupFormat   = "backup format without a keyed integrity check"
	ReasonNotInBackup    = "lease not in the backup"
	ReasonNoMapInBackup  = "no map of the lease in the backup"
	ReasonNotInVault     = "lease unknown to the vault"
	ReasonNotTerminal    = "lease not terminal in the vault"
	ReasonKeyPresent     = "wrapped data key still in the key directory"
	ReasonMapDecrypts    = "map still decrypts"
	ReasonOtherFailure   = "map undecryptable for another reason than a missing key"
	ReasonLiveFails      = "live lease does not decrypt"
)

// BackupStats counts what a backup holds.
type BackupStats struct {
	Leases int   `json:"leases"`
	Maps   int   `json:"maps"`
	Bytes  int64 `json:"bytes"`
}

// RestoreStats counts what a restore did.
type RestoreStats struct {
	Restored int `json:"restored"` // leases added
	Maps     int `json:"maps"`     // sealed maps added with them
	Skipped  int `json:"skipped"`  // leases already present, kept as they are
}

// Rotation is the result of a key-epoch rotation.
type Rotation struct {
	From, To  uint64
	Rewrapped int // data keys re-wrapped under To
	Dropped   int // wrapped data keys that failed authentication and were destroyed
}

// MaxRecord bounds a lease record (JSON) in bytes, as the vault stores it
// and as a client reads it off the socket.
const MaxRecord = 64 << 10
