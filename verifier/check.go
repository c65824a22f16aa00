package verifier

import (
	"context"
	"sync"

	"github.com/privacycut/privacycut/receipts"
)

// check is one verification run: the shared state of its stages. Each field
// is written by one stage and only read after it (verify lists the order):
//
//   - decode writes the decoded inputs and their digests;
//   - keyedDigests writes dig and renderWire writes wire, each on another
//     goroutine; they are read once verify has waited for them;
//   - walk writes w and the per-record findings of coverage,
//     public-preserved, owners-replaced and token-consistency into out;
//   - each claim function concludes its own entry of out.
type check struct {
	req Request
	ctx context.Context // for the call to req.Issuer
	out [nClaims]outcome

	// The evidence key, nil when absent or wiped (keyErr says which).
	key    *receipts.EvidenceKey
	keyErr error

	// The source projection, H(source document).
	src       *projection
	srcErr    error
	srcDigest string // "" without a usable key

	// The export: S(export bytes); its parts, nil when they cannot be
	// read (expErr says why); the first offset at which it differs from
	// its canonical form, or -1.
	exportDigest string
	exp          []exportPart
	expErr       error
	expCanon     int

	// The plan, S(plan document), and its mode when it is a known one.
	plan       *receipts.Plan
	planErr    error
	planDigest string
	mode       string

	voc       *vocabulary
	vocErr    error
	vocDigest string

	recs       []receipts.TransformationReceipt
	recDigests []string // S(receipt) of each element as given
	recErr     error

	dig  keyedDigests
	wire wireCheck
	w    walkResult

	tasks []*task // goroutines started by the check

	mu    sync.Mutex
	frees []func() // buffers to free once no goroutine runs
}

// exportPart is one part of the export as decoded.
type exportPart struct {
	kind string
	text []byte
}

// task is work running on another goroutine. A panic in it is carried to
// wait, which panics again on the verifying goroutine, where Verify
// recovers it.
type task struct {
	done   chan any
	waited bool
}

// start runs fn on another goroutine.
func (c *check) start(fn func()) *task {
	t := &task{done: make(chan any, 1)}
	c.tasks = append(c.tasks, t)
	go func() {
		defer func() { t.done <- recover() }()
		fn()
	}()
	return t
}

// wait waits for t to end and panics again if it panicked.
func (t *task) wait() {
	if t.waited {
		return
	}
	t.waited = true
	if p := <-t.done; p != nil {
		panic(p)
	}
}

// end waits for every task started, whatever its end, then frees the
// check's buffers.
func (c *check) end() {
	for _, t := range c.tasks {
		if !t.waited {
			t.waited = true
			<-t.done
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, free := range c.frees {
		free()
	}
	c.frees = nil
}

// buffer returns a zeroed buffer of n bytes that the check frees when it
// ends (canon.Options.Buffer): decoded texts go to buffers from newBuffer.
func (c *check) buffer(n int) []byte {
	b, free := newBuffer(n)
	c.onEnd(free)
	return b
}

// onEnd registers free to be called when the check ends.
func (c *check) onEnd(free func()) {
	c.mu.Lock()
	c.frees = append(c.frees, free)
	c.mu.Unlock()
}
