package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/plugin"
)

// PoolOptions configure a PluginPool.
type PoolOptions struct {
	// Exe and Args start the plugin (a program calling
	// ServePluginIfRequested, with Args [PluginArg]). Exe "" is
	// /proc/self/exe with PluginArg, as for SelfPlugin.
	Exe  string
	Args []string
	// Size is the number of warm plugin processes (default 1, at most
	// MaxPoolSize). A request waits for a free one.
	Size int
	// Log receives the plugins' logs (their stderr, which never holds
	// input) at warning level and above (nil: discarded).
	Log io.Writer
	// StartTimeout bounds each plugin's start (default 1 minute).
	StartTimeout time.Duration
}

// MaxPoolSize bounds PoolOptions.Size.
const MaxPoolSize = 64

// PluginPool is a Verifier of warm plugin processes, each serving many
// verifications one at a time: what a long-lived process (the gateway)
// uses instead of one plugin process per cut. Each verification's inputs
// are still handed over in a sealed memfd of their own (on Linux). A
// plugin whose call fails — it died, it was too slow, its answer was
// refused — is stopped and replaced by a fresh process: that call fails,
// the next one gets the new plugin. It is safe for concurrent use; Close
// stops every plugin.
type PluginPool struct {
	opt      PoolOptions
	stopping atomic.Bool
	logger   hclog.Logger
	slots    chan *poolSlot // idle slots
	all      []*poolSlot
	restarts atomic.Int64

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // restarts in progress
}

type poolSlot struct {
	w *plugin.Warm // nil when its last start failed
}

// ErrPoolClosed is returned by verifications begun after Close.
var ErrPoolClosed = errors.New("pipeline: verifier pool closed")

// StartPluginPool starts opt.Size warm verifier plugins and returns once
// all have started, or the first start's error (the others are stopped).
func StartPluginPool(ctx context.Context, opt PoolOptions) (*PluginPool, error) {
	if opt.Size <= 0 {
		opt.Size = 1
	}
	if opt.Size > MaxPoolSize {
		return nil, fmt.Errorf("pipeline: a verifier pool of more than %d plugins", MaxPoolSize)
	}
	if opt.Exe == "" {
		opt.Exe, opt.Args = "/proc/self/exe", []string{PluginArg}
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = time.Minute
	}
	p := &PluginPool{opt: opt, slots: make(chan *poolSlot, opt.Size)}
	p.logger = hclog.New(&hclog.LoggerOptions{Name: "verifier", Output: opt.Log, Level: hclog.Warn,
		Exclude: func(hclog.Level, string, ...any) bool { return p.stopping.Load() }})
	type started struct {
		w   *plugin.Warm
		err error
	}
	res := make(chan started, opt.Size)
	for range opt.Size {
		go func() {
			w, err := p.start(ctx)
			res <- started{w, err}
		}()
	}
	var first error
	for range opt.Size {
		r := <-res
		if r.err != nil && first == nil {
			first = r.err
		}
		s := &poolSlot{w: r.w}
		p.all = append(p.all, s)
	}
	if first != nil {
		p.Close()
		return nil, first
	}
	for _, s := range p.all {
		p.slots <- s
	}
	return p, nil
}

func (p *PluginPool) start(ctx context.Context) (*plugin.Warm, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opt.StartTimeout)
	defer cancel()
	w, err := plugin.StartWarm(ctx, p.opt.Exe, p.opt.Args, nil, p.logger)
	if err != nil {
		return nil, fmt.Errorf("verifier plugin: %w", err)
	}
	return w, nil
}

// Restarts returns how many plugins the pool has replaced.
func (p *PluginPool) Restarts() int64 { return p.restarts.Load() }

// Size returns the number of plugins.
func (p *PluginPool) Size() int { return p.opt.Size }

// Close stops every plugin; a call in progress fails at once. It waits
// for restarts in progress and is idempotent.
func (p *PluginPool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.stopping.Store(true)
	var ws []*plugin.Warm
	for _, s := range p.all {
		if s.w != nil {
			ws = append(ws, s.w)
		}
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.Close()
	}
	p.wg.Wait()
	return nil
}

func (p *PluginPool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// begin returns a session that takes a plugin only when it verifies, so
// that no plugin is held while the projection is parsed and cut.
func (p *PluginPool) begin(ctx context.Context, budget func(int) time.Duration) (session, error) {
	if p.isClosed() {
		return nil, ErrPoolClosed
	}
	return &poolSession{p: p, budget: budget}, nil
}

type poolSession struct {
	p      *PluginPool
	budget func(int) time.Duration
}

func (s *poolSession) verify(ctx context.Context, req verifier.Request) (verifier.Verdict, error) {
	p := s.p
	var slot *poolSlot
	select {
	case slot = <-p.slots:
	case <-ctx.Done():
		return verifier.Verdict{}, ctx.Err()
	}
	if p.isClosed() {
		p.slots <- slot
		return verifier.Verdict{}, ErrPoolClosed
	}
	// A plugin that died while idle, or whose start failed, is replaced
	// before it is used.
	if slot.w == nil || !slot.w.Usable() {
		if err := p.replace(ctx, slot); err != nil {
			p.slots <- slot
			return verifier.Verdict{}, err
		}
	}
	n := len(req.Source) + len(req.Export) + len(req.Plan) + len(req.Vocabulary) + len(req.Receipts)
	vctx, cancel := context.WithTimeout(ctx, s.budget(n))
	v, err := slot.w.Check(vctx, req)
	cancel()
	if err != nil {
		// The plugin is broken now: replace it in the background, so the
		// next request finds a warm one.
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if closed {
			p.slots <- slot
		} else {
			go func() {
				defer p.wg.Done()
				p.replace(context.Background(), slot)
				p.slots <- slot
			}()
		}
		return verifier.Verdict{}, fmt.Errorf("verifier plugin: %w", err)
	}
	p.slots <- slot
	return v, nil
}

// replace stops the slot's plugin and starts a new one. The caller owns
// the slot; slot.w is written under p.mu, which Close reads it under.
func (p *PluginPool) replace(ctx context.Context, slot *poolSlot) error {
	p.mu.Lock()
	old, closed := slot.w, p.closed
	slot.w = nil
	p.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if closed {
		return ErrPoolClosed
	}
	w, err := p.start(ctx)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		if w != nil {
			w.Close()
		}
		return ErrPoolClosed
	}
	slot.w = w
	p.mu.Unlock()
	if err == nil {
		p.restarts.Add(1)
	}
	return err
}

func (s *poolSession) close() {}
