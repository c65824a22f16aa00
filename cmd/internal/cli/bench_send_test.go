package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/internal/standin"
)

// sendBench is the fixture of the send benchmarks: a 500-finding report
// over the bundled vocabulary (about 120 KB), an irreversible
// openai-chat@1 plan for the OpenAI stand-in, its credential file, and the
// wire body a prepare of it seals.
var sendBench struct {
	once                               sync.Once
	dir, vocab, proj, plan, cred, body string
	srv                                *httptest.Server
	size                               int64
	err                                error
}

func setupSendBench(b *testing.B) {
	sendBench.once.Do(func() {
		s := &sendBench
		if s.dir, s.err = os.MkdirTemp("", "privacycut-send-bench-"); s.err != nil {
			return
		}
		v, err := gen.FromVocabulary(examples.Vocabulary)
		if err != nil {
			s.err = err
			return
		}
		doc := v.Report(500, 1)
		s.size = int64(len(doc))
		s.srv = httptest.NewServer(standin.New(standin.Options{Credential: "sk-bench"}))
		files := map[string][]byte{"vocab.json": examples.Vocabulary, "proj.json": doc, "schema.json": examples.Schema,
			"instruction.txt": examples.Instruction, "credential": []byte("sk-bench\n")}
		for name, data := range files {
			if s.err = os.WriteFile(filepath.Join(s.dir, name), data, 0o600); s.err != nil {
				return
			}
		}
		s.vocab, s.proj, s.cred = filepath.Join(s.dir, "vocab.json"), filepath.Join(s.dir, "proj.json"), filepath.Join(s.dir, "credential")
		s.plan, s.body = filepath.Join(s.dir, "plan.json"), filepath.Join(s.dir, "body.json")
		env := benchEnv(s.dir)
		if code := Run(context.Background(), []string{"plan", "init", "--vocab", s.vocab, "--consumer", "model:m",
			"--purpose", "dependency-triage", "--target", s.srv.URL + standin.OpenAIPath, "--max-uses", "1000000000",
			"--wire", "openai-chat@1", "--model", "m", "--instruction-file", filepath.Join(s.dir, "instruction.txt"),
			"--schema", filepath.Join(s.dir, "schema.json"), "-o", s.plan, s.proj}, env); code != 0 {
			s.err = io.ErrUnexpectedEOF
			return
		}
		var out bytes.Buffer
		env.Stdout = &out
		if code := Run(context.Background(), []string{"prepare", "--vocab", s.vocab, "--plan", s.plan, "--verifier", "inprocess",
			"--schema", filepath.Join(s.dir, "schema.json"), "--json", s.proj}, env); code != 0 {
			s.err = io.ErrUnexpectedEOF
			return
		}
		var bundle struct {
			Wire json.RawMessage `json:"wire"`
		}
		if s.err = json.Unmarshal(out.Bytes(), &bundle); s.err != nil {
			return
		}
		s.err = os.WriteFile(s.body, bundle.Wire, 0o600)
	})
	if sendBench.err != nil {
		b.Fatal(sendBench.err)
	}
}

// sendProcess runs the test binary as a new process per iteration, as
// as, with a fresh journal each time (a journal's size adds its reading to
// each admission: see docs/PERFORMANCE.md).
func sendProcess(b *testing.B, as string, args ...string) {
	setupSendBench(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(sendBench.size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env := append(os.Environ(), asEnv+"="+as, "HOME="+sendBench.dir,
			"PRIVACYCUT_EVIDENCE_KEY="+filepath.Join(sendBench.dir, "evidence.key"),
			"PRIVACYCUT_JOURNAL="+filepath.Join(sendBench.dir, "journal-"+strconv.Itoa(i)+".jsonl"))
		var errb bytes.Buffer
		cmd := exec.Command(exe, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, io.Discard, &errb
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v\n%s", as, args, err, errb.Bytes())
		}
	}
}

func benchSend(b *testing.B, mode string) {
	setupSendBench(b)
	s := &sendBench
	sendProcess(b, "cut", "send", "--vocab", s.vocab, "--plan", s.plan, "--verifier", mode, "--credential-file", s.cred,
		"--schema", filepath.Join(s.dir, "schema.json"), "--quarantine", filepath.Join(s.dir, "answer.json"), "--json", s.proj)
}

// BenchmarkSend500Plugin is `cut send` of the 500-finding report over
// openai-chat@1 to the stand-in, as a new process, with the verifier
// plugin (the default): read, cut, render, verify in a second process,
// seal, admit (journal), POST, read the answer, quarantine it.
func BenchmarkSend500Plugin(b *testing.B) { benchSend(b, "plugin") }

// BenchmarkSend500InProcess is the same with the verifier in process.
func BenchmarkSend500InProcess(b *testing.B) { benchSend(b, "inprocess") }

// BenchmarkSend500Check is `cut check` of the same report as a new
// process: the start, the vocabulary and the grammar, no cut and no send.
func BenchmarkSend500Check(b *testing.B) {
	setupSendBench(b)
	sendProcess(b, "cut", "check", "--vocab", sendBench.vocab, sendBench.proj)
}

// BenchmarkSend500BarePost is the baseline: a new process of the same
// binary that POSTs the same wire body with net/http and reads the
// answer.
func BenchmarkSend500BarePost(b *testing.B) {
	setupSendBench(b)
	sendProcess(b, "post", sendBench.body, sendBench.srv.URL+standin.OpenAIPath, sendBench.cred)
}

// barePost is the baseline process: POST the file body to url with the
// credential of file cred, read the answer, exit 0 on a 2xx.
func barePost(body, url, cred string) int {
	data, err := os.ReadFile(body)
	if err != nil {
		return 1
	}
	key, err := os.ReadFile(cred)
	if err != nil {
		return 1
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return 1
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 1
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return 1
	}
	return 0
}
