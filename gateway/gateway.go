package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/route"
	"github.com/privacycut/privacycut/vault/client"
)

// Options are what the configuration does not say: how the gateway logs,
// and what tests and embedding programs replace.
type Options struct {
	// Logger receives the gateway's log: JSON lines of route names, codes,
	// event ids and durations, never a value. nil: JSON on stderr.
	Logger *slog.Logger
	// PluginLog receives the verifier plugins' own log (their stderr,
	// which never holds input). nil: stderr.
	PluginLog io.Writer
	// PluginExe and PluginArgs start the verifier plugin. "": this
	// program re-executed (/proc/self/exe) with pipeline.PluginArg; the
	// program must call pipeline.ServePluginIfRequested first in main.
	PluginExe  string
	PluginArgs []string
	// Verifier, when set, replaces the warm plugin pool (an embedding
	// program's own, or pipeline.InProcess for a benchmark of the rest).
	Verifier pipeline.Verifier
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Gateway is a running gateway: its routes, verifier plugins, seal
// authority, vault connection and evidence key, and the HTTP APIs over
// them. It is safe for concurrent use.
type Gateway struct {
	cfg    *Config
	opt    Options
	log    *slog.Logger
	p      *pipeline.Pipeline
	pool   *pipeline.PluginPool
	vault  *client.Client
	key    *receipts.EvidenceKey
	tok    token
	hasTok bool
	routes map[string]*routeState
	names  []string // in configuration order
	m      *metrics
	sem    chan struct{}
	plans  *expiries

	base   context.Context // every request's context derives from it
	cancel context.CancelFunc

	mu      sync.Mutex
	flights map[*flight]struct{} // requests in flight
	servers []*http.Server
	closed  bool
}

// routeState is one loaded route: its approved note, vocabulary and schema,
// read once.
type routeState struct {
	name        string
	approved    *route.Approved
	vocab       *pipeline.Vocabulary
	schema      []byte
	credential  string
	front       *FrontDoor
	reversible  bool
	instruction string
	hasInstr    bool
}

// New starts a gateway of cfg: it reads the trust files and opens every
// route note under them (an unsigned or mis-signed note refuses the start,
// naming the file), loads each route's vocabulary and schema once and
// checks them against the route's digests, checks the credential files
// (read only at send time), loads or creates the evidence key, connects to
// the vault and starts the warm verifier plugins. It does not listen: see
// Listen, Serve and Handler.
func New(ctx context.Context, cfg *Config, opt Options) (_ *Gateway, err error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if opt.PluginLog == nil {
		opt.PluginLog = os.Stderr
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	g := &Gateway{cfg: cfg, opt: opt, log: opt.Logger, routes: map[string]*routeState{},
		sem: make(chan struct{}, cfg.maxInFlight()), flights: map[*flight]struct{}{}}
	g.plans = newExpiries()
	defer func() {
		if err != nil {
			g.release()
		}
	}()
	if cfg.Listen.TokenFile != "" {
		if g.tok, err = readToken(cfg.Listen.TokenFile); err != nil {
			return nil, err
		}
		g.hasTok = true
	}
	var keys []string
	for i, p := range cfg.Trust {
		k, err := route.ReadTrustFile(p)
		if err != nil {
			return nil, &ConfigError{Field: fmt.Sprintf("trust[%d]", i), Reason: "trust file refused", Err: err}
		}
		keys = append(keys, k...)
	}
	trust, err := route.NewTrust(keys...)
	if err != nil {
		return nil, &ConfigError{Field: "trust", Reason: "trust list refused", Err: err}
	}
	if g.key, err = receipts.LoadOrCreateEvidenceKey(cfg.EvidenceKey); err != nil {
		return nil, &ConfigError{Field: "evidence_key", Reason: "evidence key refused", Err: err}
	}
	vocabs := map[string]*pipeline.Vocabulary{}
	needVault := false
	for i := range cfg.Routes {
		rt, err := g.loadRoute(fmt.Sprintf("routes[%d]", i), &cfg.Routes[i], trust, vocabs)
		if err != nil {
			return nil, err
		}
		if _, dup := g.routes[rt.name]; dup {
			return nil, configErr(fmt.Sprintf("routes[%d].note", i), "route "+rt.name+" is configured twice")
		}
		g.routes[rt.name] = rt
		g.names = append(g.names, rt.name)
		needVault = needVault || rt.reversible
	}
	if needVault && cfg.Vault == "" {
		return nil, configErr("vault", "a reversible route needs the vault's socket")
	}
	if cfg.Vault != "" {
		if g.vault, err = client.Dial(cfg.Vault); err != nil {
			return nil, &ConfigError{Field: "vault", Reason: "cannot connect", Err: err}
		}
	}
	verifier := opt.Verifier
	if verifier == nil {
		g.pool, err = pipeline.StartPluginPool(ctx, pipeline.PoolOptions{Exe: opt.PluginExe, Args: opt.PluginArgs,
			Size: cfg.plugins(), Log: opt.PluginLog})
		if err != nil {
			return nil, err
		}
		verifier = g.pool
	}
	g.m = newMetrics(func() int64 {
		if g.pool == nil {
			return 0
		}
		return g.pool.Restarts()
	})
	g.p, err = pipeline.New(pipeline.Options{EvidenceKey: g.key, Verifier: verifier, Vault: g.vault,
		Journal: egress.OpenJournal(cfg.Journal), Now: opt.Now, Command: "cut gateway",
		Warn: func(msg string) { g.log.Warn("pipeline", "warning", msg) }})
	if err != nil {
		return nil, err
	}
	g.base, g.cancel = context.WithCancel(context.Background())
	if g.vault != nil {
		// Say at start whether the vault answers; a vault that does not
		// is not fatal (it may start later), its requests fail until then.
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := g.vault.Status(sctx)
		cancel()
		if err != nil {
			g.log.Warn("vault not reachable at start", "error", err.Error())
		} else {
			g.log.Info("vault", "profile", st.Profile.Profile)
		}
	}
	for _, n := range g.names {
		rt := g.routes[n]
		g.log.Info("route loaded", "route", n, "digest", rt.approved.Digest, "mode", rt.approved.Route.Mode,
			"wire", profileOf(rt.approved.Route), "front_door", rt.front != nil)
	}
	return g, nil
}

func profileOf(r *receipts.Route) string {
	if r.Wire == nil {
		return receipts.WireExport
	}
	return r.Wire.Profile
}

// loadRoute opens, loads and checks one route of the configuration.
func (g *Gateway) loadRoute(at string, rc *RouteConfig, trust *route.Trust, vocabs map[string]*pipeline.Vocabulary) (*routeState, error) {
	a, err := route.OpenFile(rc.Note, trust)
	if err != nil {
		return nil, &ConfigError{Field: at + ".note", Reason: "route refused: " + rc.Note, Err: err}
	}
	r := a.Route
	rt := &routeState{name: r.Name, approved: a, reversible: r.Mode == receipts.ModeReversible, front: rc.FrontDoor}
	if w := r.Wire; w != nil && w.Profile != receipts.WireExport && rc.CredentialFile == "" {
		return nil, configErr(at+".credential_file", "route "+r.Name+": wire profile "+w.Profile+" needs the provider's credential")
	}
	if r.Wire != nil && r.Wire.Instruction != "" {
		rt.instruction, rt.hasInstr = r.Wire.Instruction, true
	}
	v, ok := vocabs[rc.Vocabulary]
	if !ok {
		doc, err := readPublic(rc.Vocabulary, grammar.MaxVocabularyBytes)
		if err != nil {
			return nil, &ConfigError{Field: at + ".vocabulary", Reason: "cannot be read", Err: err}
		}
		if v, err = pipeline.LoadVocabulary(doc); err != nil {
			return nil, &ConfigError{Field: at + ".vocabulary", Reason: "not a Vocabulary@1", Err: err}
		}
		vocabs[rc.Vocabulary] = v
	}
	if v.Digest() != r.VocabularyDigest {
		return nil, configErr(at+".vocabulary", "route "+r.Name+": not the vocabulary its vocabulary_digest names")
	}
	rt.vocab = v
	switch {
	case r.OutputSchemaDigest != "" && rc.Schema == "":
		return nil, configErr(at+".schema", "route "+r.Name+" binds an output schema: give it")
	case r.OutputSchemaDigest == "" && rc.Schema != "":
		return nil, configErr(at+".schema", "route "+r.Name+" binds no output schema")
	case rc.Schema != "":
		doc, err := readPublic(rc.Schema, pipeline.MaxSchemaBytes)
		if err != nil {
			return nil, &ConfigError{Field: at + ".schema", Reason: "cannot be read", Err: err}
		}
		if _, err := checkSchema(r.OutputSchemaDigest, doc); err != nil {
			return nil, &ConfigError{Field: at + ".schema", Reason: "route " + r.Name + ": not the schema its output_schema_digest names", Err: err}
		}
		rt.schema = doc
	}
	if rc.CredentialFile != "" {
		fi, err := os.Lstat(rc.CredentialFile)
		if err != nil {
			return nil, &ConfigError{Field: at + ".credential_file", Reason: "cannot be read", Err: errors.Unwrap(err)}
		}
		if err := checkSecretFile(rc.CredentialFile, fi, maxCredentialBytes); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.Field = at + ".credential_file"
			}
			return nil, err
		}
		rt.credential = rc.CredentialFile
	}
	return rt, nil
}

// maxCredentialBytes bounds a credential file.
const maxCredentialBytes = 16 << 10

// checkSchema parses an output schema and checks it is the one digest
// names.
func checkSchema(digest string, doc []byte) (*rehydrate.Schema, error) {
	s, err := rehydrate.ParseSchema(doc)
	if err != nil {
		return nil, err
	}
	if s.Digest() != digest {
		return nil, errors.New("another schema")
	}
	return s, nil
}

// readPublic reads a public input file of at most max bytes.
func readPublic(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}

// Routes returns the names of the routes served, in configuration order.
func (g *Gateway) Routes() []string { return append([]string(nil), g.names...) }

// Pipeline returns the gateway's pipeline (its seal authority).
func (g *Gateway) Pipeline() *pipeline.Pipeline { return g.p }

// Listen opens the configured listeners: the unix socket, serving only the
// allowed peer uids, and the optional loopback TCP listener.
func (g *Gateway) Listen() ([]net.Listener, error) {
	group := -1
	if gid := g.cfg.Listen.Group; gid != nil {
		group = int(*gid)
	}
	ul, err := listenUnix(g.cfg.Listen.Unix, group)
	if err != nil {
		return nil, err
	}
	allow := []uint32{uint32(os.Geteuid())}
	if len(g.cfg.Listen.AllowUIDs) > 0 {
		allow = allow[:0]
		for _, u := range g.cfg.Listen.AllowUIDs {
			allow = append(allow, uint32(u))
		}
	}
	ls := []net.Listener{&peerListener{Listener: ul, allow: allow, refuse: func(uid uint32, err error) {
		g.m.peers.Add(1)
		if err != nil {
			g.log.Warn("unix peer refused", "reason", "no peer credentials")
			return
		}
		g.log.Warn("unix peer refused", "uid", uid)
	}}}
	if g.cfg.Listen.TCP != "" {
		tl, err := listenTCP(g.cfg.Listen.TCP)
		if err != nil {
			ul.Close()
			return nil, err
		}
		ls = append(ls, tl)
	}
	return ls, nil
}

// Serve serves the gateway's APIs on ls (from Listen) until Shutdown. It
// returns when every listener has stopped, with the first error that was
// not the shutdown itself; called after Shutdown, it closes ls and returns
// http.ErrServerClosed.
func (g *Gateway) Serve(ls []net.Listener) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		for _, l := range ls {
			l.Close()
		}
		return http.ErrServerClosed
	}
	srv := &http.Server{Handler: g.Handler(), ConnContext: connContext, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return g.base },
		ErrorLog:    slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)}
	g.servers = append(g.servers, srv)
	g.mu.Unlock()
	errs := make(chan error, len(ls))
	for _, l := range ls {
		go func() { errs <- srv.Serve(l) }()
	}
	var first error
	for range ls {
		if err := <-errs; err != nil && !errors.Is(err, http.ErrServerClosed) && first == nil {
			first = err
		}
	}
	return first
}

// Shutdown stops the gateway: it stops accepting, waits for the requests
// in flight up to the configured drain timeout (or ctx), then cancels
// those still running and revokes the lease of every reversible cut that
// did not finish, stops the verifier plugins and closes the vault
// connection. It returns the number of leases it revoked.
func (g *Gateway) Shutdown(ctx context.Context) (int, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0, nil
	}
	g.closed = true
	servers := g.servers
	g.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, g.cfg.drainTimeout())
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.Shutdown(dctx) })
	}
	wg.Wait()
	drained := g.waitFlights(dctx)
	revoked := 0
	if !drained {
		// Whatever still runs is canceled: the pipeline revokes the lease
		// of a cut canceled before its answer was rehydrated. A request
		// that has not unwound after a few seconds has its lease revoked
		// here.
		g.cancel()
		uctx, cancel := context.WithTimeout(context.Background(), unwindTimeout)
		if !g.waitFlights(uctx) {
			revoked = g.revokeUnfinished()
			g.waitFlights(context.Background())
		}
		cancel()
	}
	g.cancel()
	for _, s := range servers {
		s.Close()
	}
	g.log.Info("gateway stopped", "drained", drained, "leases_revoked", revoked)
	g.release()
	return revoked, nil
}

// unwindTimeout is how long canceled requests are given to end before
// their leases are revoked by Shutdown itself.
const unwindTimeout = 5 * time.Second

// release stops what New started.
func (g *Gateway) release() {
	if g.cancel != nil {
		g.cancel()
	}
	if g.p != nil {
		if err := g.p.Close(); err != nil {
			// A seal's journal line that no admission synced: the
			// journal's path and errno only.
			g.log.Warn("journal not synced at stop", "error", err.Error())
		}
	}
	if g.pool != nil {
		g.pool.Close()
	}
	if g.vault != nil {
		g.vault.Close()
	}
	if g.key != nil {
		g.key.Wipe()
	}
	g.tok.Wipe()
}

// flight is one request being served; lease is its cut's, once prepared.
type flight struct {
	mu    sync.Mutex
	lease string
	done  bool
}

func (g *Gateway) begin() *flight {
	f := &flight{}
	g.mu.Lock()
	g.flights[f] = struct{}{}
	g.mu.Unlock()
	return f
}

func (g *Gateway) end(f *flight) {
	f.mu.Lock()
	f.done = true
	f.mu.Unlock()
	g.mu.Lock()
	delete(g.flights, f)
	g.mu.Unlock()
}

func (f *flight) setLease(l string) {
	f.mu.Lock()
	f.lease = l
	f.mu.Unlock()
}

// waitFlights waits until no request is in flight or ctx is done; it
// reports whether none is.
func (g *Gateway) waitFlights(ctx context.Context) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		g.mu.Lock()
		n := len(g.flights)
		g.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// revokeUnfinished revokes the leases of the requests still in flight.
// The pipeline revokes a canceled cut's lease itself; this is the same
// for a request that has not yet noticed its cancellation. A lease
// already terminal is refused by the vault and not counted.
func (g *Gateway) revokeUnfinished() int {
	if g.vault == nil {
		return 0
	}
	g.mu.Lock()
	var leases []string
	for f := range g.flights {
		f.mu.Lock()
		if f.lease != "" && !f.done {
			leases = append(leases, f.lease)
		}
		f.mu.Unlock()
	}
	g.mu.Unlock()
	n := 0
	for _, l := range leases {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := g.vault.Revoke(ctx, l)
		cancel()
		if err == nil {
			n++
			g.log.Info("lease revoked at shutdown", "lease", l)
		}
	}
	return n
}
