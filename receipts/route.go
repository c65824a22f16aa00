package receipts

// SchemaRoute is the schema name of an approved route.
const SchemaRoute = "DisclosureRoute@1"

// Route is a DisclosureRoute@1: what a security reviewer approves once, and
// from which a DisclosurePlan@1 is made for each disclosure. It holds the
// fields a plan would need except those that name one projection
// (manifest_digest, restricted_ref) or one moment (expires_at); instead it
// bounds the plan's lifetime by MaxLifetimeS. Package route reads, signs,
// verifies and instantiates routes; its documentation defines the format
// and the rules a route must meet.
type Route struct {
	Schema           string         `json:"schema"`
	Name             string         `json:"name"`
	Consumer         Consumer       `json:"consumer"`
	Purpose          string         `json:"purpose"`
	Target           string         `json:"target"`
	Mode             string         `json:"mode"`
	Wire             *Wire          `json:"wire,omitempty"` // nil is export@1
	Categories       PlanCategories `json:"categories"`
	VocabularyDigest string         `json:"vocabulary_digest"`
	// OutputSchemaDigest is S(output schema document): set for a
	// reversible route and for any wire profile but export@1, absent
	// otherwise.
	OutputSchemaDigest string `json:"output_schema_digest,omitempty"`
	MaxUses            int    `json:"max_uses"`
	MaxLifetimeS       int    `json:"max_lifetime_s"`
	ThreatModel        string `json:"threat_model"`
	Retention          string `json:"retention"`

	// Reversible routes only.
	RemoteDeadlineS int    `json:"remote_deadline_s,omitempty"`
	ReturnWindowS   int    `json:"return_window_s,omitempty"`
	Station         string `json:"station,omitempty"`

	MaxParents int `json:"max_parents"`
}

// WireProfile returns the route's wire profile name, WireExport when the
// route has none.
func (r *Route) WireProfile() string {
	if r.Wire == nil {
		return WireExport
	}
	return r.Wire.Profile
}
