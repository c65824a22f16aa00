package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/receipts"
)

// TestMain makes the test binary its own verifier plugin (PoolOptions.Exe
// "" starts /proc/self/exe with PluginArg).
func TestMain(m *testing.M) {
	ServePluginIfRequested()
	os.Exit(m.Run())
}

func poolPipeline(t *testing.T, size int) (*Pipeline, *PluginPool, *Vocabulary) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts plugin processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := StartPluginPool(ctx, PoolOptions{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	key, _ := receipts.NewEvidenceKey(bytes.Repeat([]byte{7}, 32))
	p, err := New(Options{EvidenceKey: key, Verifier: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	v, err := LoadVocabulary(examples.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	return p, pool, v
}

// planSeq makes every example plan distinct (its lifetime): the seal
// authority seals one plan and export once.
var planSeq atomic.Int64

func prepareExample(t *testing.T, p *Pipeline, v *Vocabulary) (*Cut, error) {
	t.Helper()
	plan, err := p.MakePlan(v, examples.Projection, PlanOptions{Consumer: receipts.Consumer{Kind: "model", ID: "m"},
		Purpose: "dependency-triage", Target: "http://127.0.0.1:1/v1/honest",
		Expires: time.Hour + time.Duration(planSeq.Add(1))*time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.Prepare(context.Background(), Input{Vocabulary: v, Plan: plan, Projection: examples.Projection})
}

// TestPluginPool: a pool of two warm plugins verifies many cuts, 16 at a
// time (run under -race), each sealed, without starting any process more.
func TestPluginPool(t *testing.T) {
	p, pool, v := poolPipeline(t, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			cut, err := prepareExample(t, p, v)
			if err == nil && !cut.Sealed() {
				err = errors.New("not sealed")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := pool.Restarts(); n != 0 {
		t.Errorf("%d restarts", n)
	}
}

// TestPluginPoolReplacesDeadPlugin: a plugin killed while idle is replaced
// before its next use; one killed during a call fails that call only, and
// the next verification succeeds on its replacement.
func TestPluginPoolReplacesDeadPlugin(t *testing.T) {
	p, pool, v := poolPipeline(t, 1)
	if _, err := prepareExample(t, p, v); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		t.Helper()
		s := <-pool.slots
		pid := s.w.Pid()
		pool.slots <- s
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	// Killed while idle: wait until the pool can see it, then prepare.
	kill()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s := <-pool.slots
		usable := s.w.Usable()
		pool.slots <- s
		if !usable {
			break
		}
	}
	if cut, err := prepareExample(t, p, v); err != nil || !cut.Sealed() {
		t.Fatalf("after an idle plugin died: %v", err)
	}
	if n := pool.Restarts(); n != 1 {
		t.Fatalf("%d restarts, want 1", n)
	}
	// Killed during a call: a request whose plugin dies fails; the next
	// one is verified by the replacement.
	s := <-pool.slots
	pid := s.w.Pid()
	pool.slots <- s
	syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(0) // the process may or may not be reaped yet: either way the call below must not pass
	_, err := prepareExample(t, p, v)
	if err == nil {
		// The pool saw the death before the call and replaced the plugin.
		if pool.Restarts() != 2 {
			t.Fatal("a killed plugin verified a cut")
		}
	}
	if cut, err := prepareExample(t, p, v); err != nil || !cut.Sealed() {
		t.Fatalf("the request after a plugin died: %v", err)
	}
}

// TestPluginPoolClosed: a pool refuses verifications once closed.
func TestPluginPoolClosed(t *testing.T) {
	p, pool, v := poolPipeline(t, 1)
	pool.Close()
	pool.Close()
	if _, err := prepareExample(t, p, v); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("err = %v, want ErrPoolClosed", err)
	}
}
