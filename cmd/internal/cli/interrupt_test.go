package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/lease"
)

// TestInterrupt: `cut prepare` stopped by SIGINT, SIGTERM or SIGQUIT while
// it works exits ExitError saying it was interrupted, prints no bundle, and
// has stopped its verifier plugin and removed the plugin's socket directory
// before it exits: nothing is left in its TMPDIR. Nothing of the input is
// printed, and no SIGQUIT, not even a second one, makes the runtime dump
// the goroutines' stacks.
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cut on a 16 MiB projection")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gv := gen.NewVocab()
	vocab, proj, plan := filepath.Join(dir, "vocab.json"), filepath.Join(dir, "proj.json"), filepath.Join(dir, "plan.json")
	if err := os.WriteFile(vocab, gv.JSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proj, gen.Projection(gv.Records(gen.Options{Seed: 3, Size: 16 << 20})), 0o600); err != nil {
		t.Fatal(err)
	}
	env := benchEnv(dir)
	var errb bytes.Buffer
	env.Stderr = &errb
	if code := Run(context.Background(), []string{"plan", "init", "--vocab", vocab, "--consumer", "model:m",
		"--purpose", "p", "--target", "https://m.example/", "-o", plan, proj}, env); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb.Bytes())
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(exe, "prepare", "--vocab", vocab, "--plan", plan, "--json", proj)
			cmd.Env = append(os.Environ(), asEnv+"=cut", "TMPDIR="+tmp,
				"PRIVACYCUT_EVIDENCE_KEY="+filepath.Join(dir, "evidence.key"),
				"PRIVACYCUT_JOURNAL="+filepath.Join(dir, "journal.jsonl"))
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// The verifier plugin is being started once its socket
			// directory exists; the prepare of 16 MiB takes far longer.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
				if m, _ := filepath.Glob(filepath.Join(tmp, "privacycut-verifier-*")); len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no verifier plugin started")
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if sig == syscall.SIGQUIT {
				cmd.Process.Signal(sig) // a second one is ignored, not the runtime's dump
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != ExitError {
				t.Fatalf("exit %d (%v), want %d\n%s", code, cmd.ProcessState, ExitError, errb.Bytes())
			}
			if !strings.Contains(errb.String(), "cut prepare: interrupted") {
				t.Errorf("stderr does not say the command was interrupted:\n%s", errb.Bytes())
			}
			if out.Len() != 0 {
				t.Errorf("an interrupted prepare printed %d bytes", out.Len())
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left in TMPDIR: %v", left)
			}
			if strings.Contains(errb.String(), "corp.example") {
				t.Errorf("stderr holds input:\n%s", errb.Bytes())
			}
			if strings.Contains(errb.String(), "goroutine ") {
				t.Errorf("stderr holds a goroutine dump:\n%s", errb.Bytes())
			}
		})
	}
}

// TestReversibleCutCanceledRevokesLease: a reversible prepare canceled after
// the vault granted its lease, and before the lease was bound to the sealed
// cut, exits ExitError and leaves the lease REVOKED, not ACTIVE: with the
// verifier in process the cut goes on to the bind, which the cancellation
// fails; with the plugin the verification fails first.
func TestReversibleCutCanceledRevokesLease(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts an 8 MiB projection")
	}
	f := newVaultFixture(t)
	gv := gen.NewVocab()
	vocab, proj, plan := filepath.Join(f.dir, "gvocab.json"), filepath.Join(f.dir, "gproj.json"), filepath.Join(f.dir, "gplan.json")
	if err := os.WriteFile(vocab, gv.JSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proj, gen.Projection(gv.Records(gen.Options{Seed: 5, Size: 8 << 20, Distinct: 300})), 0o600); err != nil {
		t.Fatal(err)
	}
	schema, err := filepath.Abs("../../../examples/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errb := f.run(t, "plan", "init", "--vocab", vocab, "--consumer", "model:m", "--purpose", "dependency-triage",
		"--target", "https://m.example/", "--mode", "reversible", "--schema", schema, "--station", "station-a",
		"--return-window", "30m", "-o", plan, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	seen := map[string]bool{}
	for _, mode := range []string{"inprocess", "plugin"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Cancel as soon as the vault has granted a new lease: the cut
			// of 8 MiB and its verification take far longer.
			granted, done := make(chan string, 1), make(chan struct{})
			go func() {
				defer cancel()
				for ; ; time.Sleep(time.Millisecond) {
					select {
					case <-done:
						granted <- ""
						return
					default:
					}
					infos, err := f.c.List(context.Background())
					if err != nil {
						continue
					}
					for _, in := range infos {
						if !seen[in.Lease.ID] {
							granted <- in.Lease.ID
							return
						}
					}
				}
			}()
			var out, errb bytes.Buffer
			code := Run(ctx, []string{"prepare", "--vocab", vocab, "--plan", plan, "--verifier", mode, "--vault", f.sock, "--json", proj},
				Env{Stdout: &out, Stderr: &errb, Getenv: f.getenv})
			close(done)
			id := <-granted
			if id == "" {
				t.Fatalf("no lease granted; exit %d\n%s", code, errb.Bytes())
			}
			seen[id] = true
			if code != ExitError || !strings.Contains(errb.String(), "cut prepare: interrupted") {
				t.Fatalf("exit %d, want %d (interrupted)\n%s", code, ExitError, errb.Bytes())
			}
			info, err := f.c.Show(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if info.Lease.State != lease.Revoked {
				t.Fatalf("lease %s after a canceled cut, want %s", info.Lease.State, lease.Revoked)
			}
		})
	}
}

// TestRehydrationNotAbandoned: a `cut send --schema` canceled while the
// vault rehydrates its answer still receives the result once the vault has
// consumed the lease (which destroys its key): the command completes and
// prints it. A proxy between cut and the vault holds the vault's replies
// from the rehydration request on (the first large request after the model
// answered), the test cancels once the lease is CONSUMED, and the proxy then
// lets the reply through.
func TestRehydrationNotAbandoned(t *testing.T) {
	f := newVaultFixture(t)
	proxy := newHoldProxy(t, f.sock, filepath.Join(f.dir, "run", "proxy.sock"))
	answered := make(chan struct{})
	var once sync.Once
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The next large request to the vault is the rehydration.
		proxy.holdAfter(1 << 10)
		once.Do(func() { close(answered) })
		standin.Handler().ServeHTTP(w, r)
	}))
	defer model.Close()
	schema, err := filepath.Abs("../../../examples/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	proj := f.write(t, "p.json", projection(
		"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\""+canary+"\" owner.team=\""+canary+"-team\"\n"))
	plan := filepath.Join(f.dir, "plan.json")
	if code, _, errb := f.run(t, "plan", "init", "--vocab", f.vocab, "--consumer", "model:m", "--purpose", "dependency-triage",
		"--target", model.URL+"/v1/honest", "--mode", "reversible", "--schema", schema, "--station", "station-a",
		"--return-window", "30m", "-o", plan, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched := make(chan error, 1)
	go func() {
		watched <- func() error {
			select {
			case <-answered:
			case <-time.After(30 * time.Second):
				return errors.New("the model was never asked")
			}
			// Cancel once the lease is consumed, its reply held; then let
			// the reply through.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
				infos, _ := f.c.List(context.Background())
				if len(infos) == 1 && infos[0].Lease.State == lease.Consumed {
					break
				}
				if time.Now().After(deadline) {
					return errors.New("the lease was never consumed")
				}
			}
			cancel()
			time.Sleep(100 * time.Millisecond)
			proxy.release()
			return nil
		}()
	}()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"send", "--vocab", f.vocab, "--plan", plan, "--verifier", "inprocess", "--vault", proxy.path,
		"--schema", schema, "--quarantine", filepath.Join(f.dir, "answer.json"), "--json", proj},
		Env{Stdout: &out, Stderr: &errb, Getenv: f.getenv})
	proxy.release()
	if err := <-watched; err != nil {
		t.Fatalf("%v; exit %d\n%s", err, code, errb.Bytes())
	}
	if ctx.Err() == nil {
		t.Fatal("the command was not canceled")
	}
	if code != ExitOK {
		t.Fatalf("exit %d: the lease was consumed and the answer lost\n%s", code, errb.Bytes())
	}
	var res struct {
		Rehydrated *struct {
			Result json.RawMessage `json:"result"`
			State  string          `json:"state"`
		} `json:"rehydrated"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Rehydrated == nil || res.Rehydrated.State != "CONSUMED" ||
		!bytes.Contains(res.Rehydrated.Result, []byte(`"owner_module":"`+canary+`"`)) {
		t.Fatalf("no rehydrated answer: %v\n%s", err, out.Bytes())
	}
	assertNoCanary(t, "stderr", errb.Bytes())
}

// holdProxy forwards unix socket connections to a target. Once armed with
// holdAfter(n), the first read of at least n bytes from a client makes it
// hold everything the target sends back, until release.
type holdProxy struct {
	path    string
	mu      sync.Mutex
	cond    *sync.Cond
	armed   int // hold after a client read of at least this many bytes; 0: not armed
	holding bool
}

func newHoldProxy(t *testing.T, target, path string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{path: path}
	p.cond = sync.NewCond(&p.mu)
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.release()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("unix", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() {
				defer conns.Done()
				defer s.Close()
				// Client to target: a large enough read arms the hold.
				p.pump(s, c, func(n int) {
					if p.armed > 0 && n >= p.armed {
						p.armed, p.holding = 0, true
					}
				})
			}()
			go func() {
				defer conns.Done()
				defer c.Close()
				// Target to client: held while holding.
				p.pump(c, s, func(int) {
					for p.holding {
						p.cond.Wait()
					}
				})
			}()
		}
	}()
	return p
}

// pump copies src to dst until either fails, calling before with p.mu
// held ahead of forwarding each read of n bytes.
func (p *holdProxy) pump(dst io.Writer, src io.Reader, before func(n int)) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			before(n)
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *holdProxy) holdAfter(n int) {
	p.mu.Lock()
	p.armed = n
	p.mu.Unlock()
}

func (p *holdProxy) release() {
	p.mu.Lock()
	p.holding = false
	p.cond.Broadcast()
	p.mu.Unlock()
}
