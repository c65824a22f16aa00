package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/route"
)

// The uids and group of the egress lock: the gateway's own, the agent
// runtime's, and the group whose members may reach the gateway's socket.
// None needs an entry in /etc/passwd.
const (
	lockGatewayUID = 64101
	lockRuntimeUID = 64102
	lockAgentsGID  = 64103
)

// probeEnv makes the test binary the agent runtime of TestEgressLock: it
// runs probeEgress, prints its findings as JSON and exits.
const probeEnv = "PRIVACYCUT_TEST_EGRESS_PROBE"

func init() {
	if spec := os.Getenv(probeEnv); spec != "" {
		var p lockProbe
		if err := json.Unmarshal([]byte(spec), &p); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(p.run())
		os.Exit(0)
	}
}

// lockProbe is what the runtime inside the namespace tries.
type lockProbe struct {
	Direct     string `json:"direct"`     // the provider stand-in's URL
	Socket     string `json:"socket"`     // the gateway's unix socket
	Credential string `json:"credential"` // the provider credential file
	Request    []byte `json:"request"`    // a chat request the gateway covers
	Uncovered  []byte `json:"uncovered"`  // one it must refuse
	Step       string `json:"step"`       // "direct", "gateway" or "uncovered"
}

// lockFindings is what the probe saw.
type lockFindings struct {
	UID             int             `json:"uid"`
	DirectErr       string          `json:"direct_err"` // "" when the direct POST got an answer
	DirectStatus    int             `json:"direct_status"`
	CredentialErr   string          `json:"credential_err"` // "" when the runtime could read the credential
	GatewayStatus   int             `json:"gateway_status"`
	GatewayBody     json.RawMessage `json:"gateway_body"`
	UncoveredStatus int             `json:"uncovered_status"`
	UncoveredBody   json.RawMessage `json:"uncovered_body"`
	Err             string          `json:"err"`
}

func (p lockProbe) run() (f lockFindings) {
	f.UID = os.Getuid()
	gw := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p.Socket)
	}}}
	post := func(body []byte) (int, json.RawMessage, error) {
		resp, err := gw.Post("http://gateway/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	var err error
	switch p.Step {
	case "direct":
		direct := &http.Client{Timeout: 5 * time.Second}
		resp, err := direct.Post(p.Direct, "application/json", bytes.NewReader(p.Request))
		if err != nil {
			f.DirectErr = err.Error()
		} else {
			f.DirectStatus = resp.StatusCode
			resp.Body.Close()
		}
		if _, err := os.ReadFile(p.Credential); err != nil {
			f.CredentialErr = err.Error()
		}
	case "gateway":
		if f.GatewayStatus, f.GatewayBody, err = post(p.Request); err != nil {
			f.Err = "through the gateway: " + err.Error()
		}
	case "uncovered":
		if f.UncoveredStatus, f.UncoveredBody, err = post(p.Uncovered); err != nil {
			f.Err = "uncovered through the gateway: " + err.Error()
		}
	default:
		f.Err = "unknown step"
	}
	return f
}

// TestEgressLock is the egress lock of docs/GATEWAY.md, run through `cut
// gateway`: the gateway under its own uid holds the provider credential
// (0400, its own) and serves a unix socket of the agents' group; the agent
// runtime, under another uid in a network namespace of its own (`unshare
// --net`), cannot reach the provider stand-in on loopback TCP outside it,
// nor read the credential, and reaches the provider only through the
// gateway's socket; an uncovered body is refused with nothing sent
// upstream.
func TestEgressLock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("egress lock: needs root (uid switches, network namespaces); running as uid %d", os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("egress lock: needs unshare(1) (util-linux): not on PATH")
	}
	if out, err := exec.Command(unshare, "--net", "--", "true").CombinedOutput(); err != nil {
		t.Skipf("egress lock: network namespaces (unshare --net) unavailable: %v: %s", err, out)
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Not t.TempDir: its parent is 0700, and the other uids must reach in.
	base, err := os.MkdirTemp("", "privacycut-egress-lock-")
	must(err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(os.Chmod(base, 0o755))
	// The test binary, as cut and as the runtime, where both uids may run it.
	exe := filepath.Join(base, "bin", "cut")
	must(os.Mkdir(filepath.Dir(exe), 0o755))
	must(os.Chmod(filepath.Dir(exe), 0o755))
	self, err := os.ReadFile("/proc/self/exe")
	must(err)
	must(os.WriteFile(exe, self, 0o755))
	must(os.Chmod(exe, 0o755))
	self = nil

	gwp := startGatewayProc(t, base, exe, gatewayProcOptions{uid: lockGatewayUID, groups: []uint32{lockAgentsGID},
		listen: map[string]any{"allow_uids": []int{lockRuntimeUID}, "group": lockAgentsGID}})
	provider, srv, gw, sock, gatewayLog, stop := gwp.provider, gwp.srv, gwp.dir, gwp.sock, gwp.log, gwp.stop
	for path, want := range map[string]os.FileMode{filepath.Dir(sock): 0o710, sock: 0o660} {
		fi, err := os.Lstat(path)
		must(err)
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want || st.Uid != lockGatewayUID || st.Gid != lockAgentsGID {
			t.Errorf("%s: mode %#o uid %d gid %d, want %#o %d:%d", path, fi.Mode().Perm(), st.Uid, st.Gid, want, lockGatewayUID, lockAgentsGID)
		}
	}

	// The runtime: another uid, in the agents' group, in a network
	// namespace with no route out.
	chat := func(texts ...string) []byte {
		var msgs []map[string]any
		for _, s := range texts {
			msgs = append(msgs, map[string]any{"role": "user", "content": s})
		}
		b, _ := json.Marshal(map[string]any{"model": "triage", "messages": msgs})
		return b
	}
	var texts []string
	var proj struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	must(json.Unmarshal(examples.Projection, &proj))
	for _, p := range proj.Parts {
		texts = append(texts, p.Text)
	}
	canary := "CANARY prose the vocabulary does not cover\n"
	probe := lockProbe{Direct: srv.URL + standin.OpenAIPath, Socket: sock,
		Credential: filepath.Join(gw, "credential"), Request: chat(texts...), Uncovered: chat(texts[0], canary)}
	runtime := func(step string) lockFindings {
		t.Helper()
		probe.Step = step
		spec, err := json.Marshal(probe)
		must(err)
		r := exec.Command(unshare, "--net", "--setuid", strconv.Itoa(lockRuntimeUID), "--setgid", strconv.Itoa(lockAgentsGID), "--", exe)
		r.Env = []string{probeEnv + "=" + string(spec), "PATH=/usr/bin:/bin"}
		var out, errb bytes.Buffer
		r.Stdout, r.Stderr, r.Dir = &out, &errb, "/"
		if err := r.Run(); err != nil {
			t.Fatalf("the runtime (%s): %v\n%s", step, err, errb.Bytes())
		}
		var f lockFindings
		if err := json.Unmarshal(out.Bytes(), &f); err != nil {
			t.Fatalf("the runtime's findings (%s): %v: %s", step, err, out.Bytes())
		}
		if f.Err != "" {
			t.Fatalf("the runtime: %s\n%s", f.Err, gatewayLog())
		}
		if f.UID != lockRuntimeUID {
			t.Errorf("the runtime ran as uid %d, want %d", f.UID, lockRuntimeUID)
		}
		return f
	}

	// 1. No route out: the direct POST never reached the stand-in.
	f := runtime("direct")
	if f.DirectErr == "" {
		t.Errorf("a direct POST from the namespace got HTTP %d", f.DirectStatus)
	} else if !strings.Contains(f.DirectErr, "network is unreachable") && !strings.Contains(f.DirectErr, "connection refused") {
		t.Errorf("the direct POST failed, but not for want of a route: %s", f.DirectErr)
	}
	if !errors.Is(fsErr(f.CredentialErr), os.ErrPermission) {
		t.Errorf("the runtime reading the credential file: %q, want permission denied", f.CredentialErr)
	}
	if n := len(provider.Requests()); n != 0 {
		t.Fatalf("the stand-in got %d requests before any went through the gateway", n)
	}

	// 2. Through the gateway's socket the same request is answered, and
	// the stand-in saw exactly one request, with the credential the
	// runtime could not read, and no owner value.
	f = runtime("gateway")
	if f.GatewayStatus != http.StatusOK {
		t.Fatalf("through the gateway: HTTP %d %s\n%s", f.GatewayStatus, f.GatewayBody, gatewayLog())
	}
	var answer struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(f.GatewayBody, &answer); err != nil || answer.Object != "chat.completion" || len(answer.Choices) != 1 ||
		!json.Valid([]byte(answer.Choices[0].Message.Content)) {
		t.Errorf("through the gateway: not a chat.completion holding a JSON answer: %v %s", err, f.GatewayBody)
	}
	got := provider.Requests()
	if len(got) != 1 {
		t.Fatalf("the stand-in got %d requests after one through the gateway, want 1", len(got))
	}
	if a := got[0].Header.Get("Authorization"); a != "Bearer sk-lock-"+strings.Repeat("5e", 12) {
		t.Errorf("the gateway's request carried Authorization %q, not the credential", a)
	}
	for _, owner := range []string{"git.corp.example/payments/ledger", "payments-core", "Dana Okafor", "edge-01.pay.corp.example"} {
		if bytes.Contains(got[0].Body, []byte(owner)) {
			t.Errorf("the body the gateway sent holds the owner value %q", owner)
		}
	}

	// 3. An uncovered body: refused where it is, nothing sent upstream.
	f = runtime("uncovered")
	var refusal struct {
		Error struct {
			Code    string `json:"code"`
			Param   string `json:"param"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(f.UncoveredBody, &refusal); err != nil || f.UncoveredStatus != http.StatusUnprocessableEntity ||
		refusal.Error.Code != "UNCOVERED_TEXT" || refusal.Error.Param != "messages[1].content" {
		t.Errorf("uncovered: HTTP %d %s, want 422 UNCOVERED_TEXT at messages[1].content", f.UncoveredStatus, f.UncoveredBody)
	}
	if bytes.Contains(f.UncoveredBody, []byte("CANARY")) {
		t.Errorf("the refusal echoes the uncovered text: %s", f.UncoveredBody)
	}
	if n := len(provider.Requests()); n != 1 {
		t.Errorf("the stand-in got %d requests after the uncovered one, want still 1", n)
	}
	stop()
	logText := gatewayLog()
	for _, bad := range []string{"CANARY", "sk-lock-", "Dana Okafor", "payments-core"} {
		if strings.Contains(logText, bad) {
			t.Errorf("the gateway's log holds %q", bad)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(logText))
	codes := map[string]int{}
	for sc.Scan() {
		var line struct {
			API  string `json:"api"`
			Code string `json:"code"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.API == "openai" {
			codes[line.Code]++
		}
	}
	if codes["OK"] != 1 || codes["UNCOVERED_TEXT"] != 1 {
		t.Errorf("the gateway logged front-door requests %v, want one OK and one UNCOVERED_TEXT", codes)
	}
}

// fsErr turns the probe's error text back into a sentinel errors.Is knows.
func fsErr(s string) error {
	if strings.Contains(s, "permission denied") {
		return os.ErrPermission
	}
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// TestGatewayUnits checks the egress lock's systemd units, the gateway's
// (docs/privacycut-gateway.service) and the runtime's (the ini block of
// docs/GATEWAY.md), with `systemd-analyze verify`: no error and no warning,
// the commands replaced by an executable that exists here. Each unit must
// also hold the lines the lock rests on.
func TestGatewayUnits(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("gateway units: needs systemd-analyze (systemd): not on PATH")
	}
	unit, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "privacycut-gateway.service"))
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "GATEWAY.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(guide), "```ini\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("docs/GATEWAY.md holds no ini block (the runtime's unit)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	units := []struct {
		name, text, cmd string
		need            []string
	}{
		{"privacycut-gateway.service", string(unit), "/usr/local/bin/cut",
			[]string{"User=privacycut-gateway", "SupplementaryGroups=privacycut-agents", "RuntimeDirectory=privacycut-gateway"}},
		{"agent-runtime.service", block, "/usr/local/bin/agent-runtime",
			[]string{"PrivateNetwork=yes", "RestrictAddressFamilies=AF_UNIX", "Group=privacycut-agents", "BindPaths=/run/privacycut-gateway/socket"}},
	}
	var paths []string
	for _, u := range units {
		for _, line := range append(u.need, "ExecStart="+u.cmd) {
			if !strings.Contains(u.text, "\n"+line) {
				t.Errorf("%s lacks the line %s", u.name, line)
			}
		}
		p := filepath.Join(dir, u.name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(u.text, u.cmd, exe)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(sa, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// gatewayProcOptions shape a `cut gateway` process of startGatewayProc.
type gatewayProcOptions struct {
	uid     int            // the gateway's uid and gid (0: this process's)
	groups  []uint32       // its supplementary groups
	listen  map[string]any // members of listen besides unix
	schema  []byte         // the output schema (default: the example's)
	plugins int            // warm verifier plugins (default 1)
	// startFails: the gateway is expected to exit at start-up; the
	// process's exit code and log are returned in exitCode and log.
	startFails bool
}

// gatewayProc is a running `cut gateway` with one route, "triage", of
// openai-chat@1 (irreversible) to a provider stand-in on loopback TCP.
type gatewayProc struct {
	provider *standin.Server
	srv      *httptest.Server
	dir      string // the gateway's directory (configuration, credential, state)
	sock     string
	pid      int
	log      func() string
	stop     func()
	exitCode int // with startFails: how the gateway ended
}

// startGatewayProc writes a gateway's directory under base and starts exe
// (this test binary) as `cut gateway` in it; it returns once the socket
// answers.
func startGatewayProc(t *testing.T, base, exe string, o gatewayProcOptions) *gatewayProc {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	owner := o.uid
	if owner == 0 {
		owner = os.Geteuid()
	}
	schemaDoc := examples.Schema
	if o.schema != nil {
		schemaDoc = o.schema
	}
	plugins := o.plugins
	if plugins == 0 {
		plugins = 1
	}
	// The gateway's directory: its configuration, its credential, its state.
	gw := filepath.Join(base, "gateway")
	must(os.Mkdir(gw, 0o700))
	must(os.Chown(gw, owner, owner))
	write := func(name string, data []byte, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(gw, name)
		must(os.WriteFile(p, data, mode))
		must(os.Chown(p, owner, owner))
		must(os.Chmod(p, mode))
	}
	provider := standin.New(standin.Options{Credential: "sk-lock-" + strings.Repeat("5e", 12)})
	srv := httptest.NewServer(provider)
	t.Cleanup(srv.Close)
	v, err := pipeline.LoadVocabulary(examples.Vocabulary)
	must(err)
	s, err := rehydrate.ParseSchema(schemaDoc)
	must(err)
	key, err := route.GenerateKey(rand.Reader, "reviewer.lock")
	must(err)
	defer key.Wipe()
	doc, err := json.Marshal(map[string]any{"schema": "DisclosureRoute@1", "name": "triage",
		"consumer": map[string]any{"kind": "model", "id": "triage-llm"}, "purpose": "dependency-triage",
		"target": srv.URL + standin.OpenAIPath, "mode": "irreversible",
		"categories": map[string]any{"allowed": []string{"module", "package", "function", "file", "team", "person", "host"},
			"prohibited": []string{"credential"}},
		"vocabulary_digest": v.Digest(), "output_schema_digest": s.Digest(), "max_uses": 1, "max_lifetime_s": 600,
		"threat_model": "remote-model-honest-but-curious", "retention": "no-retention", "max_parents": 64,
		"wire": map[string]any{"profile": "openai-chat@1", "model": "gpt-test", "instruction": string(examples.Instruction),
			"max_output_tokens": 4096}})
	must(err)
	note, err := route.Approve(key, doc)
	must(err)
	write("triage.note", note, 0o644)
	write("reviewers.vkeys", []byte(key.VerifierKey()+"\n"), 0o644)
	write("vocabulary.json", examples.Vocabulary, 0o644)
	write("schema.json", schemaDoc, 0o644)
	write("credential", []byte("sk-lock-"+strings.Repeat("5e", 12)+"\n"), 0o400)
	// The socket's parent, where the gateway makes its 0710 directory.
	run := filepath.Join(base, "run")
	must(os.Mkdir(run, 0o755))
	must(os.Chmod(run, 0o755))
	must(os.Chown(run, owner, owner))
	sock := filepath.Join(run, "gateway", "gateway.sock")
	lineage := "sha256:" + strings.Repeat("4f", 32)
	listen := map[string]any{"unix": sock}
	for k, v := range o.listen {
		listen[k] = v
	}
	cfg, err := json.Marshal(map[string]any{"schema": "Gateway@1", "listen": listen,
		"trust": []string{"reviewers.vkeys"}, "evidence_key": "evidence.key", "journal": "journal.jsonl",
		"routes": []any{map[string]any{"note": "triage.note", "vocabulary": "vocabulary.json", "schema": "schema.json",
			"credential_file": "credential", "front_door": map[string]any{"kind": "block",
				"label": map[string]any{"class": "private", "weight": 3, "categories": []string{"owner.module"},
					"subjects": []string{"ns/payments"}, "parents": []string{lineage}, "handling": []string{}},
				"lineage": []string{lineage}}}},
		"verifier": map[string]any{"plugins": plugins}})
	must(err)
	write("gateway.json", cfg, 0o644)

	// The gateway, as its own uid, in the host's network namespace.
	logPath := filepath.Join(base, "gateway.log")
	logf, err := os.Create(logPath)
	must(err)
	t.Cleanup(func() { logf.Close() })
	g := exec.Command(exe, "gateway", "--config", filepath.Join(gw, "gateway.json"))
	g.Env = []string{asEnv + "=cut", "PATH=/usr/bin:/bin", "HOME=" + gw}
	g.Dir, g.Stdout, g.Stderr = gw, logf, logf
	if o.uid != 0 {
		g.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.uid), Groups: o.groups}}
	}
	must(g.Start())
	exited := make(chan error, 1)
	go func() { exited <- g.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		g.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(45 * time.Second):
			g.Process.Kill()
			<-exited
			t.Error("the gateway did not stop within 45 s of SIGTERM")
		}
	}
	t.Cleanup(stop)
	gatewayLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	deadline := time.Now().Add(time.Minute)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			stopped = true
			if o.startFails {
				return &gatewayProc{dir: gw, sock: sock, log: gatewayLog, stop: func() {}, exitCode: g.ProcessState.ExitCode()}
			}
			t.Fatalf("the gateway exited at start-up: %v\n%s", err, gatewayLog())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway's socket did not answer within a minute\n%s", gatewayLog())
		}
	}
	if o.startFails {
		t.Fatalf("the gateway started, want a refusal\n%s", gatewayLog())
	}
	return &gatewayProc{provider: provider, srv: srv, dir: gw, sock: sock, pid: g.Process.Pid, log: gatewayLog, stop: stop}
}

// TestGatewaySocketGroupRefused: a gateway whose user is not a member of
// listen.group cannot give its socket that group, and refuses start-up
// (exit 1) naming listen.group, before it serves.
func TestGatewaySocketGroupRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("socket group: needs root to run the gateway as a uid outside the group; running as uid %d", os.Geteuid())
	}
	base, err := os.MkdirTemp("", "privacycut-socket-group-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	exe := filepath.Join(base, "bin", "cut")
	for _, step := range []func() error{
		func() error { return os.Chmod(base, 0o755) },
		func() error { return os.Mkdir(filepath.Dir(exe), 0o755) },
		func() error { return os.Chmod(filepath.Dir(exe), 0o755) },
		func() error {
			self, err := os.ReadFile("/proc/self/exe")
			if err != nil {
				return err
			}
			return os.WriteFile(exe, self, 0o755)
		},
		func() error { return os.Chmod(exe, 0o755) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	gwp := startGatewayProc(t, base, exe, gatewayProcOptions{uid: lockGatewayUID, startFails: true,
		listen: map[string]any{"group": lockAgentsGID}})
	log := gwp.log()
	if gwp.exitCode != 1 || !strings.Contains(log, "listen.group") {
		t.Errorf("exit %d, want 1 naming listen.group:\n%s", gwp.exitCode, log)
	}
	if strings.Contains(log, "sk-lock-") {
		t.Errorf("the refusal holds the credential:\n%s", log)
	}
	if _, err := os.Lstat(gwp.sock); err == nil {
		t.Errorf("the refused gateway left its socket %s", gwp.sock)
	}
}
