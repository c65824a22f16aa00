package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/gateway"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/embedded"
)

// plugins returns the pids of this process's verifier plugin children.
func plugins(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := procStat(pid)
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmd, []byte(pipeline.PluginArg)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the fields of /proc/pid/stat after "pid (comm)" (comm
// may hold spaces, so the line is cut after its last ')'): field 3 of the
// line, the state, is the first; nil if the process is gone.
func procStat(pid int) []string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
}

func signalAll(t *testing.T, pids []int, sig syscall.Signal) {
	t.Helper()
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil {
			t.Fatalf("kill %d: %v", p, err)
		}
	}
}

// disclosedOf reads a 502 or 422 answer that says the request was disclosed.
func disclosedOf(t *testing.T, body []byte) gateway.Disclosed {
	t.Helper()
	var d gateway.Disclosed
	mustJSON(t, body, &d)
	return d
}

// TestVerifierKilledMidRequest: the warm plugin is stopped, a request
// waits for its verification, and the plugin is killed: that request
// fails cleanly (an error, nothing sealed or sent, its lease revoked),
// and the next request is verified by a fresh plugin.
func TestVerifierKilledMidRequest(t *testing.T) {
	e := newEnv(t, envOptions{plugins: 1})
	pids := plugins(t)
	if len(pids) != 1 {
		t.Fatalf("%d plugin processes, want 1", len(pids))
	}
	signalAll(t, pids, syscall.SIGSTOP)
	type reply struct {
		status int
		body   []byte
	}
	done := make(chan reply, 1)
	go func() {
		s, b := e.post("/v1/routes/triage/cut", examples.Projection, false)
		done <- reply{s, b}
	}()
	// The cut takes milliseconds; then the request waits on the plugin.
	time.Sleep(500 * time.Millisecond)
	signalAll(t, pids, syscall.SIGKILL)
	r := <-done
	if r.status != http.StatusInternalServerError {
		t.Fatalf("the request whose plugin died: HTTP %d: %s", r.status, r.body)
	}
	status, body := e.post("/v1/routes/triage/cut", examples.Projection, false)
	if status != http.StatusOK {
		t.Fatalf("the next request: HTTP %d: %s", status, body)
	}
	if p := plugins(t); len(p) != 1 || p[0] == pids[0] {
		t.Errorf("plugins now %v, before %v", p, pids)
	}
	// The replacement is counted once it has started (in the background).
	var m []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, m = e.get("/metrics"); strings.Contains(string(m), "privacycut_gateway_verifier_restarts_total 1\n") {
			break
		}
	}
	if !strings.Contains(string(m), "privacycut_gateway_verifier_restarts_total 1\n") {
		t.Errorf("metrics do not count the restart:\n%s", m)
	}
	// The failed request's lease was granted and revoked: no lease is
	// left ACTIVE.
	leasesNotActive(t, e)
}

// leasesNotActive fails when the vault holds an ACTIVE or CLAIMED lease.
func leasesNotActive(t *testing.T, e *env) {
	t.Helper()
	c, err := client.Dial(e.vault.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	infos, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if s := in.Lease.State.String(); s == "ACTIVE" || s == "CLAIMED" {
			t.Errorf("lease %s left %s", in.Lease.ID, s)
		}
	}
}

// TestVaultRestarted: with vaultd stopped, a reversible request fails
// cleanly (503, nothing sent); once it is back on its socket, the
// gateway's connection reconnects and the next request succeeds.
func TestVaultRestarted(t *testing.T) {
	e := newEnv(t, envOptions{})
	if status, body := e.post("/v1/routes/triage/cut", examples.Projection, false); status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	if err := e.vault.Close(); err != nil {
		t.Fatal(err)
	}
	status, body := e.post("/v1/routes/triage/cut", examples.Projection, false)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "VAULT_UNAVAILABLE") {
		t.Fatalf("vault down: HTTP %d: %s", status, body)
	}
	v, err := embedded.Open(filepath.Join(e.dir, "vault"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.vault = v
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body = e.post("/v1/routes/triage/cut", examples.Projection, false)
		if status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // gRPC's reconnection backoff
	}
	if status != http.StatusOK {
		t.Fatalf("vault back: HTTP %d: %s", status, body)
	}
}

// TestUpstreamFaults: a provider that hangs is given up after the route's
// remote deadline (2 s), one that answers 500 and one whose answer is
// refused at rehydration are each answered saying the request was
// disclosed, with the lease REVOKED; uses never pass max_uses.
func TestUpstreamFaults(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		route  string
		status int
		code   receipts.Code
		within time.Duration
	}{
		{"hang", http.StatusBadGateway, receipts.UpstreamFailed, 10 * time.Second},
		{"fail", http.StatusBadGateway, receipts.UpstreamFailed, 10 * time.Second},
		{"invent", http.StatusUnprocessableEntity, receipts.TokenNotIssued, 10 * time.Second},
	} {
		t.Run(tc.route, func(t *testing.T) {
			t0 := time.Now()
			status, body := e.post("/v1/routes/"+tc.route+"/cut", examples.Projection, false)
			took := time.Since(t0)
			if status != tc.status {
				t.Fatalf("HTTP %d: %s", status, body)
			}
			if took > tc.within {
				t.Errorf("took %v", took)
			}
			if tc.route == "hang" && took < 2*time.Second {
				t.Errorf("gave up after %v, before the remote deadline", took)
			}
			d := disclosedOf(t, body)
			if !d.Refused || !d.Disclosed || d.Lease == nil || d.LeaseState != "REVOKED" || len(d.Reasons) != 1 || d.Reasons[0].Code != tc.code {
				t.Fatalf("answer: %s", body)
			}
			uses := 0
			for _, dec := range d.Decisions {
				if dec.Admit {
					uses++
					if dec.Use > dec.MaxUses {
						t.Errorf("use %d of %d", dec.Use, dec.MaxUses)
					}
				}
			}
			// A 500 is redelivered until the plan's uses are spent; a hang
			// ends at the deadline, an answer refused at rehydration was
			// delivered once.
			want := 1
			if tc.route == "fail" {
				want = 2
			}
			if uses != want {
				t.Errorf("%d admissions, want %d", uses, want)
			}
		})
	}
	leasesNotActive(t, e)
}

// TestConcurrentClients: 64 clients at once, over both listeners and both
// APIs, every one answered, every answer its own disclosure (run under
// -race).
func TestConcurrentClients(t *testing.T) {
	e := newEnv(t, envOptions{})
	texts := exampleTexts(t)
	const n = 64
	var wg sync.WaitGroup
	var mu sync.Mutex
	seals := map[string]bool{}
	errs := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			var status int
			var body []byte
			route := []string{"triage", "triage-irr"}[i%2]
			if i%4 < 2 {
				status, body = e.post("/v1/routes/"+route+"/cut", examples.Projection, i%3 == 0)
			} else {
				status, body = e.post("/v1/chat/completions", chatBody(route, texts, nil), i%3 == 0)
			}
			if status != http.StatusOK {
				errs <- fmt.Sprintf("client %d: HTTP %d: %.300s", i, status, body)
				return
			}
			var seal struct {
				Seal       string `json:"seal"`
				Privacycut struct {
					Seal string `json:"seal"`
				} `json:"privacycut"`
			}
			json.Unmarshal(body, &seal)
			s := seal.Seal + seal.Privacycut.Seal
			mu.Lock()
			defer mu.Unlock()
			if s == "" || seals[s] {
				errs <- fmt.Sprintf("client %d: seal %q missing or reused", i, s)
			}
			seals[s] = true
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	leasesNotActive(t, e)
	// Each request's seal is released when it ends: the authority of a
	// long-lived gateway holds none of them.
	if seals, _ := e.g.Pipeline().Authority().Live(); seals != 0 {
		t.Errorf("the authority still holds %d seals after every request ended", seals)
	}
}

// TestShutdownRevokes: a stopping gateway waits for requests in flight up
// to its drain timeout, then cancels the rest and revokes their leases;
// new requests are refused meanwhile.
func TestShutdownRevokes(t *testing.T) {
	e := newEnv(t, envOptions{
		config: func(c map[string]any) { c["limits"] = map[string]any{"drain_timeout_s": 1} },
		routes: func(name string, r map[string]any) {
			if name == "hang" {
				r["remote_deadline_s"] = 30
			}
		},
	})
	done := make(chan []byte, 1)
	go func() {
		resp, err := e.unix.Post("http://gateway/v1/routes/hang/cut", "application/json", bytes.NewReader(examples.Projection))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- b
	}()
	// Wait until the request is in flight, then for its cut (milliseconds)
	// to reach the provider.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, m := e.get("/metrics")
		if strings.Contains(string(m), "privacycut_gateway_in_flight 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never arrived")
		}
	}
	time.Sleep(time.Second)
	t0 := time.Now()
	e.stopped = true
	if _, err := e.g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < time.Second || d > 15*time.Second {
		t.Errorf("Shutdown took %v with a 1 s drain", d)
	}
	<-e.served
	body := <-done
	d := disclosedOf(t, body)
	if d.Lease == nil {
		t.Fatalf("answer: %s", body)
	}
	c, err := client.Dial(e.vault.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.Show(context.Background(), *d.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if s := info.Lease.State.String(); s != "REVOKED" {
		t.Errorf("the unfinished cut's lease is %s", s)
	}
	e.noOwnerValues("the gateway's log", e.log.String())
}

// TestStopSyncsJournal: a seal that no admission followed (the credential
// file became unusable after start, and a send reads it before its first
// admission) leaves its journal line to the stop, which syncs it; a stop
// that cannot says so in the log.
func TestStopSyncsJournal(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := os.Chmod(filepath.Join(e.dir, "credential"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.cut("chat-irr", examples.Projection); err == nil {
		t.Fatal("a cut with a group-readable credential file succeeded")
	}
	path := filepath.Join(e.dir, "journal.jsonl")
	j, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(j, []byte(`"kind":"seal"`)) || bytes.Contains(j, []byte(`"kind":"admit"`)) {
		t.Fatalf("the journal holds no seal line, or an admission")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e.stop()
	if !strings.Contains(e.log.String(), `"msg":"journal not synced at stop"`) {
		t.Errorf("the stop did not report the journal it could not sync:\n%s", e.log.String())
	}
}
