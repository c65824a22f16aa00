package gateway

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
)

// SchemaConfig is the schema name of the gateway's configuration.
const SchemaConfig = "Gateway@1"

// Limits of the configuration and of requests.
const (
	// MaxConfigBytes bounds the configuration document.
	MaxConfigBytes = 1 << 20
	// MaxRoutes bounds the routes one gateway serves.
	MaxRoutes = 256
	// DefaultMaxRequestBytes and MaxRequestBytes bound a request body
	// (limits.max_request_bytes): a Projection@1 or a chat request.
	DefaultMaxRequestBytes = 64 << 20
	MaxRequestBytes        = 1 << 30
	// DefaultMaxInFlight is limits.max_in_flight: requests served at once;
	// more are answered 503.
	DefaultMaxInFlight = 256
	// DefaultRequestTimeout is limits.request_timeout_s: the longest a
	// request's plan lives, and so the longest a request may take.
	DefaultRequestTimeout = 5 * time.Minute
	// DefaultDrainTimeout is limits.drain_timeout_s: how long a stopping
	// gateway waits for requests in flight.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultPlugins is verifier.plugins: warm verifier plugin processes.
	DefaultPlugins = 2
	// MaxPlugins bounds verifier.plugins.
	MaxPlugins = 16
	// maxSeconds bounds the limits given in seconds (one day).
	maxSeconds = 24 * 3600
)

// Config is a Gateway@1 configuration document. Paths are resolved
// against the directory of the configuration file (ParseConfig's dir).
type Config struct {
	Schema      string        `json:"schema"`
	Listen      Listen        `json:"listen"`
	Vault       string        `json:"vault,omitempty"`
	Trust       []string      `json:"trust"`
	EvidenceKey string        `json:"evidence_key"`
	Journal     string        `json:"journal"`
	Routes      []RouteConfig `json:"routes"`
	Verifier    *Verifier     `json:"verifier,omitempty"`
	Limits      *Limits       `json:"limits,omitempty"`
}

// Listen says where the gateway listens.
type Listen struct {
	// Unix is the socket path; its directory is made 0700 (or must be),
	// the socket 0600.
	Unix string `json:"unix"`
	// AllowUIDs are the peer uids the unix socket serves (SO_PEERCRED);
	// absent: the gateway's own uid only.
	AllowUIDs []int64 `json:"allow_uids,omitempty"`
	// Group, when given, is the gid of the group the runtimes' uids are in:
	// the socket's directory is then 0710 and the socket 0660, both of that
	// group, so that a runtime of another uid can reach the socket (the
	// allow-list still decides who is served). The gateway's user must be
	// a member of it. Absent: 0700 and 0600, the gateway's user only.
	Group *int64 `json:"group,omitempty"`
	// TCP is an optional loopback address (127.0.0.1:8088, [::1]:8088);
	// any other address refuses start-up.
	TCP string `json:"tcp,omitempty"`
	// TokenFile holds the bearer token TCP requests must carry (required
	// with TCP): a regular file of the gateway's user, mode 0600.
	TokenFile string `json:"token_file,omitempty"`
}

// RouteConfig is one route the gateway serves. Nothing here can change
// where the route sends: the target is the approved route's.
type RouteConfig struct {
	// Note is the approved route: a signed note, verified under Trust.
	Note string `json:"note"`
	// Vocabulary is the Vocabulary@1 the route's vocabulary_digest names.
	Vocabulary string `json:"vocabulary"`
	// Schema is the output schema the route's output_schema_digest names
	// (required when the route binds one, refused otherwise).
	Schema string `json:"schema,omitempty"`
	// CredentialFile holds the provider credential, read at send time.
	CredentialFile string `json:"credential_file,omitempty"`
	// FrontDoor is what every front-door user message becomes; a route
	// without one is not served at the front door.
	FrontDoor *FrontDoor `json:"front_door,omitempty"`
}

// FrontDoor is the kind, label and lineage every user message of a
// front-door request becomes (a request cannot change them).
type FrontDoor struct {
	Kind    string        `json:"kind"`
	Label   grammar.Label `json:"label"`
	Lineage []string      `json:"lineage"`
}

// Verifier configures the warm verifier plugins.
type Verifier struct {
	Plugins int `json:"plugins,omitempty"`
}

// Limits bound requests and the gateway's stop.
type Limits struct {
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`
	MaxInFlight     int   `json:"max_in_flight,omitempty"`
	RequestTimeoutS int   `json:"request_timeout_s,omitempty"`
	DrainTimeoutS   int   `json:"drain_timeout_s,omitempty"`
}

// ConfigError is a configuration that refuses start-up: the member at
// fault (a JSON path of the configuration, never a value) and a fixed
// reason, with the route's note path or name when it is about a route.
type ConfigError struct {
	Field  string // "listen.tcp", "routes[2].note"
	Reason string
	Err    error // a content-free cause, or nil
}

func (e *ConfigError) Error() string {
	s := "gateway: config: " + e.Field + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(field, reason string) *ConfigError { return &ConfigError{Field: field, Reason: reason} }

// ParseConfig reads a Gateway@1 document strictly (no duplicate or unknown
// members, valid UTF-8, at most MaxConfigBytes), checks it, and resolves
// its relative paths against dir.
func ParseConfig(doc []byte, dir string) (*Config, error) {
	if len(doc) > MaxConfigBytes {
		return nil, configErr("", "document larger than the limit")
	}
	var c Config
	if err := canon.Unmarshal(doc, &c, canon.Options{MaxBytes: MaxConfigBytes}); err != nil {
		e := configErr("", "not a Gateway@1 document")
		e.Err = err
		return nil, e
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	c.resolve(dir)
	return &c, nil
}

var partKinds = []string{"block", "history", "continuation", "query", "tool", "artifact"}
var classes = []string{"public", "internal", "private", "restricted"}

func (c *Config) check() error {
	if c.Schema != SchemaConfig {
		return configErr("schema", "is not "+SchemaConfig)
	}
	l := &c.Listen
	if l.Unix == "" {
		return configErr("listen.unix", "required")
	}
	for i, u := range l.AllowUIDs {
		if u < 0 || u > 1<<32-2 {
			return configErr(fmt.Sprintf("listen.allow_uids[%d]", i), "not a uid")
		}
	}
	if l.Group != nil && (*l.Group < 0 || *l.Group > 1<<32-2) {
		return configErr("listen.group", "not a gid")
	}
	if l.TCP != "" {
		if _, err := loopbackAddr(l.TCP); err != nil {
			return err
		}
		if l.TokenFile == "" {
			return configErr("listen.token_file", "required with listen.tcp")
		}
	} else if l.TokenFile != "" {
		return configErr("listen.token_file", "given without listen.tcp")
	}
	if len(c.Trust) == 0 {
		return configErr("trust", "at least one trust file")
	}
	for i, t := range c.Trust {
		if t == "" {
			return configErr(fmt.Sprintf("trust[%d]", i), "empty path")
		}
	}
	if c.EvidenceKey == "" {
		return configErr("evidence_key", "required")
	}
	if c.Journal == "" {
		return configErr("journal", "required")
	}
	if len(c.Routes) == 0 {
		return configErr("routes", "at least one route")
	}
	if len(c.Routes) > MaxRoutes {
		return configErr("routes", fmt.Sprintf("more than %d routes", MaxRoutes))
	}
	for i := range c.Routes {
		if err := c.Routes[i].check(fmt.Sprintf("routes[%d]", i)); err != nil {
			return err
		}
	}
	if v := c.Verifier; v != nil && (v.Plugins < 0 || v.Plugins > MaxPlugins) {
		return configErr("verifier.plugins", fmt.Sprintf("1 to %d", MaxPlugins))
	}
	if lim := c.Limits; lim != nil {
		switch {
		case lim.MaxRequestBytes < 0 || lim.MaxRequestBytes > MaxRequestBytes:
			return configErr("limits.max_request_bytes", fmt.Sprintf("1 to %d", MaxRequestBytes))
		case lim.MaxInFlight < 0 || lim.MaxInFlight > 1<<16:
			return configErr("limits.max_in_flight", "1 to 65536")
		case lim.RequestTimeoutS < 0 || lim.RequestTimeoutS > maxSeconds:
			return configErr("limits.request_timeout_s", fmt.Sprintf("1 to %d", maxSeconds))
		case lim.DrainTimeoutS < 0 || lim.DrainTimeoutS > maxSeconds:
			return configErr("limits.drain_timeout_s", fmt.Sprintf("1 to %d", maxSeconds))
		}
	}
	return nil
}

func (r *RouteConfig) check(at string) error {
	if r.Note == "" {
		return configErr(at+".note", "required")
	}
	if r.Vocabulary == "" {
		return configErr(at+".vocabulary", "required")
	}
	fd := r.FrontDoor
	if fd == nil {
		return nil
	}
	at += ".front_door"
	if !slices.Contains(partKinds, fd.Kind) {
		return configErr(at+".kind", "not a part kind")
	}
	if !slices.Contains(classes, fd.Label.Class) {
		return configErr(at+".label.class", "not a label class")
	}
	if fd.Label.Weight < 0 {
		return configErr(at+".label.weight", "negative")
	}
	if len(fd.Lineage) == 0 {
		return configErr(at+".lineage", "empty: every request would be refused UNKNOWN_LINEAGE")
	}
	for i, l := range fd.Lineage {
		if l == "" || l == "unknown" {
			return configErr(fmt.Sprintf("%s.lineage[%d]", at, i), "unknown lineage: every request would be refused UNKNOWN_LINEAGE")
		}
	}
	return nil
}

// resolve makes the configuration's relative paths relative to dir.
func (c *Config) resolve(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&c.Listen.Unix)
	abs(&c.Listen.TokenFile)
	abs(&c.Vault)
	abs(&c.EvidenceKey)
	abs(&c.Journal)
	for i := range c.Trust {
		abs(&c.Trust[i])
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		abs(&r.Note)
		abs(&r.Vocabulary)
		abs(&r.Schema)
		abs(&r.CredentialFile)
	}
}

// loopbackAddr parses a listen.tcp address: an IP literal on the loopback
// network and a port. Host names are refused (a name resolves to whatever
// the resolver says).
func loopbackAddr(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || port == "" || strings.ContainsAny(host, "%") {
		return netip.AddrPort{}, configErr("listen.tcp", "not an IP:port address")
	}
	ap, err := netip.ParseAddrPort(net.JoinHostPort(host, port))
	if err != nil {
		return netip.AddrPort{}, configErr("listen.tcp", "not an IP literal and port (host names are refused)")
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return netip.AddrPort{}, configErr("listen.tcp", "not a loopback address")
	}
	return ap, nil
}

func (c *Config) plugins() int {
	if c.Verifier != nil && c.Verifier.Plugins > 0 {
		return c.Verifier.Plugins
	}
	return DefaultPlugins
}

func (c *Config) maxRequestBytes() int64 {
	if c.Limits != nil && c.Limits.MaxRequestBytes > 0 {
		return c.Limits.MaxRequestBytes
	}
	return DefaultMaxRequestBytes
}

func (c *Config) maxInFlight() int {
	if c.Limits != nil && c.Limits.MaxInFlight > 0 {
		return c.Limits.MaxInFlight
	}
	return DefaultMaxInFlight
}

func (c *Config) requestTimeout() time.Duration {
	if c.Limits != nil && c.Limits.RequestTimeoutS > 0 {
		return time.Duration(c.Limits.RequestTimeoutS) * time.Second
	}
	return DefaultRequestTimeout
}

func (c *Config) drainTimeout() time.Duration {
	if c.Limits != nil && c.Limits.DrainTimeoutS > 0 {
		return time.Duration(c.Limits.DrainTimeoutS) * time.Second
	}
	return DefaultDrainTimeout
}
