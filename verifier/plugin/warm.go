package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/internal/attest"
)

// Warm is a verifier plugin process kept running for many requests, one at
// a time: a long-lived host (the gateway) pays the plugin's start once, not
// per request. On Linux each request's inputs are written into a memfd of
// their own, sealed, and passed to the plugin over the socket pair it got
// at start, exactly as for a launched plugin; elsewhere they are streamed
// over the gRPC connection. A request whose vocabulary is byte for byte the
// one sent last names the plugin's kept copy instead of carrying it again;
// the plugin verifies with the bytes it kept.
//
// A Warm serves one request at a time (Verify holds its lock for the whole
// call), so the one memfd waiting on the channel is always the current
// request's. Any failure of a call — a broken connection, a canceled or
// timed-out call, an answer the host refuses — marks it broken: a memfd
// the plugin may not have taken could otherwise be read for the next
// request, and a plugin that misbehaved once is not trusted again. A broken
// or exited Warm refuses every further call with ErrBroken; the caller
// closes it and starts another (pipeline.PluginPool does).
type Warm struct {
	mu     sync.Mutex // held for a whole call
	c      *Client
	attach *os.File // the host end of the attachment channel, nil where unsupported
	broken bool
	closed bool
	// sent is a copy of the vocabulary the plugin last received in full;
	// a request whose vocabulary is the same bytes names the plugin's kept
	// one instead of carrying it again (keptCalls counts those calls).
	sent      []byte
	keptCalls int
}

// warmGOGC is a warm plugin's GOGC: a fifth less CPU a request than the
// default, for 4 MiB more resident memory (BenchmarkVerifyWarm,
// docs/PERFORMANCE.md).
const warmGOGC = 200

// ErrBroken is returned by Warm.Verify once a call has failed, the plugin
// process has exited or the Warm was closed.
var ErrBroken = errors.New("verifier: warm plugin is broken or stopped")

// StartWarm starts exe with args as a verifier plugin that serves many
// requests (Warm.Verify), pinned, isolated and connected exactly as by
// Start, with an attachment channel as for Launch. It returns once the
// plugin has started and hardened itself. ctx bounds the start only.
//
// Unless env sets GOGC, the plugin runs with GOGC=warmGOGC: its live heap is
// small (the inputs are in one buffer it keeps, a request's tables die
// with it), so at the default 100 it collects at every request or two.
func StartWarm(ctx context.Context, exe string, args []string, env []string, logger hclog.Logger) (*Warm, error) {
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		env = append(slices.Clip(env), "GOGC="+strconv.Itoa(warmGOGC))
	}
	cmd, kill, host, child, err := newCommand(exe, args, env, true)
	if err != nil {
		return nil, err
	}
	w := &Warm{attach: host}
	c, err := start(ctx, cmd, kill, logger, w.attach != nil)
	if child != nil {
		child.Close() // the plugin has its own copy, or will never run
	}
	if err != nil {
		if w.attach != nil {
			w.attach.Close()
		}
		return nil, err
	}
	w.c = c
	return w, nil
}

// StartWarmSelf is StartWarm of the running executable re-executed with
// Arg (see LaunchSelf): the program must call ServeIfPlugin first thing in
// main.
func StartWarmSelf(ctx context.Context, logger hclog.Logger) (*Warm, error) {
	exe, err := selfExecutable()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	return StartWarm(ctx, exe, []string{Arg}, nil, logger)
}

// Usable reports whether the plugin may still be asked: no call has
// failed, it has not been closed and its process has not exited. A plugin
// may still die between Usable and the next call, which then fails.
func (w *Warm) Usable() bool {
	if !w.mu.TryLock() {
		return true // busy with a call: alive as far as anyone knows
	}
	defer w.mu.Unlock()
	return !w.broken && !w.closed && !w.c.pc.Exited()
}

// Verify sends req to the plugin and returns its verification, checked as
// a launched plugin's is. Calls are serialized. A failed call returns its
// error and leaves the Warm broken (ErrBroken for every later call).
func (w *Warm) Verify(ctx context.Context, req verifier.Request) (receipts.Verification, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken || w.closed || w.c.pc.Exited() {
		w.broken = true
		return receipts.Verification{}, ErrBroken
	}
	v, err := w.verify(ctx, req)
	if err != nil {
		w.broken = true
		return receipts.Verification{}, err
	}
	return v, nil
}

func (w *Warm) verify(ctx context.Context, req verifier.Request) (receipts.Verification, error) {
	if err := ctx.Err(); err != nil {
		return receipts.Verification{}, err
	}
	g, ok := w.c.checker.(*grpcClient)
	if !ok {
		return receipts.Verification{}, fmt.Errorf("%w: not a plugin client", ErrInternal)
	}
	kept := len(req.Vocabulary) > 0 && bytes.Equal(w.sent, req.Vocabulary)
	send := req
	if kept {
		send.Vocabulary = nil
	}
	if w.attach != nil {
		f, err := makeAttachment(inputsOf(send))
		if err != nil {
			return receipts.Verification{}, fmt.Errorf("%w: attachment: %w", ErrInternal, err)
		}
		// The plugin reads or maps its own copy of the descriptor; ours is
		// closed whatever happens.
		defer f.Close()
		if err := sendAttachment(w.attach, f); err != nil {
			return receipts.Verification{}, fmt.Errorf("%w: attachment: %w", ErrInternal, err)
		}
	}
	v, err := g.verify(ctx, send, kept)
	if err != nil {
		return v, err
	}
	if kept {
		w.keptCalls++
	} else {
		w.sent = bytes.Clone(req.Vocabulary)
	}
	return v, nil
}

// Check is Verify returning the result as a verifier.Verdict: the form the
// seal authority accepts.
func (w *Warm) Check(ctx context.Context, req verifier.Request) (verifier.Verdict, error) {
	v, err := w.Verify(ctx, req)
	if err != nil {
		return verifier.Verdict{}, err
	}
	return attest.Make(v), nil
}

// Close stops the plugin process and releases the channel. It waits for
// a call in progress only as long as the killed plugin takes to fail it.
func (w *Warm) Close() error {
	// Kill first, without the lock: a call in progress then fails at once.
	w.c.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		if w.attach != nil {
			w.attach.Close()
		}
	}
	return nil
}

// Exited reports whether the plugin process has exited.
func (c *Client) Exited() bool { return c.pc.Exited() }

// Pid returns the plugin process's id, 0 when it is not known. Tests kill
// the process through it; a host has no other use for it.
func (w *Warm) Pid() int {
	if rc := w.c.pc.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}
