package cli

import "github.com/privacycut/privacycut/censor"

// policyRevision is the policy the seal authority of this build enforces.
const policyRevision = censor.PolicyRevision
