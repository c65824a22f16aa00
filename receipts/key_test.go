package receipts

import (
	"bytes"
	"encoding/base64"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
)

func seqKey(t *testing.T) *EvidenceKey {
	t.Helper()
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i)
	}
	k, err := NewEvidenceKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEvidenceKeyHMAC(t *testing.T) {
	k := seqKey(t)
	// Independent values: Python hmac.new(bytes(range(32)), msg, sha256).
	const want = "hmac-sha256:6fbec19bd9484ae134c69a925e04a188b1713989f476a0cc2c31f063260d3683"
	if got := k.HMAC([]byte("privacycut evidence")); got != want {
		t.Errorf("HMAC = %s", got)
	}
	m := k.NewHMAC()
	m.Write([]byte("privacycut "))
	m.Write([]byte("evidence"))
	if got := FormatHMAC(m.Sum(nil)); got != want {
		t.Errorf("NewHMAC = %s", got)
	}
	got, err := k.HMACCanonical(map[string]any{"b": []bool{true}, "a": 1})
	if err != nil || got != "hmac-sha256:da91113b13de33fcd3101a209b8cece96c597ef13010212f1a65afd0af8d19b5" {
		t.Errorf("HMACCanonical = %s, %v", got, err)
	}
	if _, err := k.HMACCanonical(make(chan int)); !errors.Is(err, canon.ErrUnsupportedType) {
		t.Errorf("HMACCanonical(chan) error = %v", err)
	}
}

func TestNewEvidenceKey(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := NewEvidenceKey(make([]byte, n)); err == nil {
			t.Errorf("NewEvidenceKey accepted %d bytes", n)
		}
	}
	b := bytes.Repeat([]byte{7}, 32)
	k, err := NewEvidenceKey(b)
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 8
	err = k.Reveal(func(key []byte) error {
		if key[0] != 7 || len(key) != 32 {
			return errors.New("key follows the caller's slice")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	sentinel := errors.New("from fn")
	if err := k.Reveal(func([]byte) error { return sentinel }); err != sentinel {
		t.Errorf("Reveal returned %v, want fn's error", err)
	}
	other, _ := NewEvidenceKey(bytes.Repeat([]byte{7}, 32))
	third, _ := NewEvidenceKey(bytes.Repeat([]byte{9}, 32))
	if !k.Equal(other) || k.Equal(third) || k.Equal(nil) {
		t.Error("Equal is wrong")
	}
}

func TestEvidenceKeyWipe(t *testing.T) {
	k := seqKey(t)
	copyOfK := *k // copies share the key
	bytesBefore := k.s.key
	k.Wipe()
	k.Wipe()
	if *bytesBefore != [32]byte{} || k.s.key != nil {
		t.Error("Wipe left key bytes")
	}
	if err := copyOfK.Reveal(func([]byte) error { return nil }); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("Reveal after Wipe = %v", err)
	}
	if _, err := k.HMACCanonical(1); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("HMACCanonical after Wipe = %v", err)
	}
	if k.Equal(k) {
		t.Error("a wiped key equals itself")
	}
	for name, use := range map[string]func(){
		"HMAC":    func() { k.HMAC(nil) },
		"NewHMAC": func() { k.NewHMAC() },
		"zero":    func() { EvidenceKey{}.HMAC(nil) },
	} {
		func() {
			defer func() {
				if r := recover(); r != ErrKeyWiped {
					t.Errorf("%s after Wipe: recovered %v, want panic(ErrKeyWiped)", name, r)
				}
			}()
			use()
		}()
	}
	var zero EvidenceKey
	if err := zero.Reveal(func([]byte) error { return nil }); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("zero key Reveal = %v", err)
	}
	zero.Wipe()
}

const plantedKey = "CANARY-evidence-key-0123456789ab" // 32 bytes

// leakForms are the encodings of the planted key an output must not hold.
func leakForms() []string {
	k := []byte(plantedKey)
	var forms []string
	for _, b := range [][]byte{k, k[:6]} {
		forms = append(forms,
			string(b),
			hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
			strings.Trim(fmt.Sprint(b), "[]"), // decimal byte list
			fmt.Sprintf("%q", b)[1:7],
		)
	}
	return forms
}

// findLeak returns the form in which out holds the planted key, or "".
func findLeak(out string) string {
	for _, f := range leakForms() {
		if strings.Contains(out, f) {
			return f
		}
	}
	return ""
}

func checkNoLeak(t *testing.T, what, out string) {
	t.Helper()
	if f := findLeak(out); f != "" {
		t.Errorf("%s leaks the key as %q: %s", what, f, out)
	}
}

// checkNotEncoded checks that json.Marshal and Marshal refuse each of vs
// and that nothing they return holds the planted key.
func checkNotEncoded(t *testing.T, vs ...any) {
	t.Helper()
	for _, v := range vs {
		out, err := json.Marshal(v)
		if err == nil {
			t.Errorf("json.Marshal(%T) succeeded: %s", v, out)
		}
		checkNoLeak(t, "json.Marshal", string(out)+fmt.Sprint(err))
		out, err = canon.Marshal(v)
		if err == nil {
			t.Errorf("canon.Marshal(%T) succeeded: %s", v, out)
		}
		checkNoLeak(t, "Marshal", string(out)+fmt.Sprint(err))
	}
}

// Equal never waits for a read lock while holding one: with writers
// queued on the keys' locks (what Wipe does), comparing copies of one key,
// and two keys both ways round, finishes instead of deadlocking.
func TestEvidenceKeyEqualConcurrentWipe(t *testing.T) {
	k, other := seqKey(t), seqKey(t)
	copyOfK := *k
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for _, s := range []*keyState{k.s, other.s} {
		writers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// What Wipe does, without wiping: queue as a writer.
				s.mu.Lock()
				runtime.Gosched()
				s.mu.Unlock()
			}
		})
	}
	var comparers sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	for _, cmp := range []func() bool{
		func() bool { return k.Equal(&copyOfK) },
		func() bool { return k.Equal(other) },
		func() bool { return other.Equal(k) },
	} {
		comparers.Go(func() {
			for time.Now().Before(deadline) {
				if !cmp() {
					t.Error("equal keys compare unequal")
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { comparers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Equal deadlocked against a writer queued on a key's lock")
	}
	close(stop)
	writers.Wait()
	k.Wipe()
	if k.Equal(&copyOfK) || copyOfK.Equal(k) || k.Equal(other) || other.Equal(k) {
		t.Error("a wiped key equals something")
	}
	if !other.Equal(seqKey(t)) {
		t.Error("a live key does not equal its bytes")
	}
}

func TestLeakCheckerCatchesLeaks(t *testing.T) {
	// The checker itself must see every planted form.
	k := []byte(plantedKey)
	for _, out := range []string{
		string(k), fmt.Sprintf("%x", k), fmt.Sprintf("%X", k), fmt.Sprint(k), fmt.Sprintf("%v", k[:8]),
		base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k), fmt.Sprintf("%q", k),
		"prefix " + hex.EncodeToString(k[:6]) + " suffix",
	} {
		if findLeak(out) == "" {
			t.Errorf("leak checker missed %q", out)
		}
	}
}

type keyHolder struct {
	Name   string
	Key    EvidenceKey
	KeyPtr *EvidenceKey
	key    EvidenceKey
	keyPtr *EvidenceKey
}

func TestEvidenceKeyRedaction(t *testing.T) {
	k, err := NewEvidenceKey([]byte(plantedKey))
	if err != nil {
		t.Fatal(err)
	}
	holder := keyHolder{Name: "h", Key: *k, KeyPtr: k, key: *k, keyPtr: k}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%08b", "% x", "%#x", "%T", "%p"}
	for _, operand := range []any{k, *k, holder, &holder, []any{k}, map[string]EvidenceKey{"k": *k}} {
		for _, verb := range verbs {
			checkNoLeak(t, fmt.Sprintf("Sprintf(%s, %T)", verb, operand), fmt.Sprintf(verb, operand))
		}
		checkNoLeak(t, "Sprint", fmt.Sprint(operand))
		checkNoLeak(t, "Sprintln", fmt.Sprintln(operand))
	}
	if got := k.String() + k.GoString() + fmt.Sprintf("%v|%#v|%x", k, *k, k); got != "EvidenceKey(REDACTED)EvidenceKey(REDACTED)EvidenceKey(REDACTED)|EvidenceKey(REDACTED)|EvidenceKey(REDACTED)" {
		t.Errorf("redaction text = %q", got)
	}

	checkNotEncoded(t, k, *k, holder, &holder, map[string]any{"k": k})
	if _, err := k.MarshalText(); !errors.Is(err, ErrKeyNotSerializable) {
		t.Errorf("MarshalText error = %v", err)
	}
	var gobOut bytes.Buffer
	if err := gob.NewEncoder(&gobOut).Encode(holder); err == nil {
		t.Error("gob encoded a key holder")
	}
	checkNoLeak(t, "gob", gobOut.String())

	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
		l := slog.New(h)
		l.Info("key", "key", k, "value", *k, "holder", holder, "holderPtr", &holder)
		l.Info("group", slog.Group("g", slog.Any("k", k)))
		l.With("k", k).Info("with")
	}
	log.New(&logs, "", 0).Printf("%v %+v", k, holder)
	checkNoLeak(t, "slog/log output", logs.String())
	if !strings.Contains(logs.String(), "REDACTED") {
		t.Errorf("logs hold no redaction marker: %s", logs.String())
	}
}

func TestLoadOrCreateEvidenceKey(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "evidence.key")
	k1, err := LoadOrCreateEvidenceKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 32 || !fi.Mode().IsRegular() {
		t.Errorf("key file mode %v size %d", fi.Mode(), fi.Size())
	}
	for _, d := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
		if di, err := os.Stat(d); err != nil || di.Mode().Perm() != 0o700 {
			t.Errorf("directory %s: %v %v", d, di.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key", len(entries))
	}
	raw, _ := os.ReadFile(path)
	if bytes.Equal(raw, make([]byte, 32)) {
		t.Error("key is all zero")
	}
	if err := k1.Reveal(func(b []byte) error {
		if !bytes.Equal(b, raw) {
			return errors.New("key differs from file")
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	k2, err := LoadOrCreateEvidenceKey(path)
	if err != nil || !k1.Equal(k2) {
		t.Errorf("reload: %v, equal %v", err, k1.Equal(k2))
	}
	k3, err := LoadOrCreateEvidenceKey(filepath.Join(root, "other.key"))
	if err != nil || k1.Equal(k3) {
		t.Errorf("second key file: %v, equal to first %v", err, k1.Equal(k3))
	}
}

func TestLoadOrCreateEvidenceKeyRefusals(t *testing.T) {
	root := t.TempDir()
	write := func(name string, n int, mode os.FileMode) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{1}, n), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", 32, 0o600)
	if _, err := LoadOrCreateEvidenceKey(good); err != nil {
		t.Fatalf("good key refused: %v", err)
	}
	if _, err := LoadOrCreateEvidenceKey(write("owner-only-read", 32, 0o400)); err != nil {
		t.Errorf("0400 key refused: %v", err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "dir")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		"group read":  write("g-r", 32, 0o640),
		"other read":  write("o-r", 32, 0o604),
		"group exec":  write("g-x", 32, 0o610),
		"other write": write("o-w", 32, 0o602),
		"short":       write("short", 31, 0o600),
		"long":        write("long", 33, 0o600),
		"empty":       write("empty", 0, 0o600),
		"symlink":     link,
		"directory":   dir,
		"fifo":        fifo,
	}
	for name, p := range refused {
		k, err := LoadOrCreateEvidenceKey(p)
		if !errors.Is(err, ErrKeyFile) || k != nil {
			t.Errorf("%s: key %v, err %v; want ErrKeyFile", name, k, err)
		}
	}
	// A regular file where a parent directory should be.
	if _, err := LoadOrCreateEvidenceKey(filepath.Join(good, "evidence.key")); err == nil {
		t.Error("key under a regular file accepted")
	}
	// Refused files are left alone.
	if fi, _ := os.Stat(refused["group read"]); fi.Mode().Perm() != 0o640 {
		t.Error("refused key file was modified")
	}
}

// A key file of another user is refused, even 0600 and even when the
// caller is root: its owner could read it or have chosen it.
func TestLoadOrCreateEvidenceKeyOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another uid")
	}
	const nobody = 65534
	path := filepath.Join(t.TempDir(), "evidence.key")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateEvidenceKey(path); err != nil {
		t.Fatalf("own key refused: %v", err)
	}
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	k, err := LoadOrCreateEvidenceKey(path)
	if !errors.Is(err, ErrKeyFile) || k != nil {
		t.Fatalf("key owned by uid %d: key %v, err %v; want ErrKeyFile", nobody, k, err)
	}
	if strings.Contains(err.Error(), "\x01") {
		t.Errorf("error quotes the key: %q", err)
	}
}

// openKeyFile checks what it opened and never blocks: a FIFO (what a racer
// could swap in after the Lstat) is refused at once rather than waited on
// for a writer, and a symbolic link is not followed.
func TestOpenKeyFileRefusesWithoutBlocking(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good")
	if err := os.WriteFile(good, bytes.Repeat([]byte{1}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"fifo": fifo, "symlink": link, "directory": root} {
		t.Run(name, func(t *testing.T) {
			errc := make(chan error, 1)
			go func() {
				f, _, err := openKeyFile(p)
				if f != nil {
					f.Close()
				}
				errc <- err
			}()
			select {
			case err := <-errc:
				if !errors.Is(err, ErrKeyFile) {
					t.Errorf("openKeyFile: %v, want ErrKeyFile", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("openKeyFile blocked")
			}
		})
	}
	f, fi, err := openKeyFile(good)
	if err != nil || fi.Size() != 32 {
		t.Fatalf("good key: %v", err)
	}
	f.Close()
}

func TestLoadOrCreateEvidenceKeyRaceGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k", "evidence.key")
	const n = 16
	keys := make([]*EvidenceKey, n)
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			keys[i], errs[i] = LoadOrCreateEvidenceKey(path)
		}()
	}
	start.Done()
	done.Wait()
	for i := range n {
		if errs[i] != nil || !keys[0].Equal(keys[i]) {
			t.Errorf("racer %d: %v, equal %v", i, errs[i], keys[0].Equal(keys[i]))
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d directory entries left, want 1", len(entries))
	}
}

// TestHelperKeyProcess is run as a subprocess by the process race test: it
// loads or creates the key named by the environment and prints a digest.
func TestHelperKeyProcess(t *testing.T) {
	path := os.Getenv("RECEIPTS_KEY_HELPER_PATH")
	if path == "" {
		t.Skip("helper process only")
	}
	k, err := LoadOrCreateEvidenceKey(path)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("digest:", k.HMAC([]byte("probe")))
}

func TestLoadOrCreateEvidenceKeyRaceProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "p", "evidence.key")
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for i := range n {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperKeyProcess$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), "RECEIPTS_KEY_HELPER_PATH="+path)
		cmds[i].Stdout = &outs[i]
		cmds[i].Stderr = &outs[i]
	}
	for i := range n {
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	var digests []string
	for i := range n {
		if err := cmds[i].Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if d, ok := strings.CutPrefix(line, "digest: "); ok {
				digests = append(digests, d)
			}
		}
	}
	if len(digests) != n {
		t.Fatalf("got %d digests from %d processes", len(digests), n)
	}
	for _, d := range digests {
		if d != digests[0] {
			t.Fatalf("processes ended with different keys: %v", digests)
		}
	}
	k, err := LoadOrCreateEvidenceKey(path)
	if err != nil || k.HMAC([]byte("probe")) != digests[0] {
		t.Errorf("key on disk differs from the racers' key: %v", err)
	}
}

func TestDefaultEvidenceKeyPath(t *testing.T) {
	tests := []struct {
		name                 string
		env, xdg, home, want string
	}{
		{"explicit", "/keys/ev.key", "/xdg", "/home/u", "/keys/ev.key"},
		{"xdg", "", "/xdg", "/home/u", "/xdg/privacycut/evidence.key"},
		{"relative xdg ignored", "", "rel/dir", "/home/u", "/home/u/.local/share/privacycut/evidence.key"},
		{"home", "", "", "/home/u", "/home/u/.local/share/privacycut/evidence.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PRIVACYCUT_EVIDENCE_KEY", tt.env)
			t.Setenv("XDG_DATA_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			got, err := DefaultEvidenceKeyPath()
			if err != nil || got != tt.want {
				t.Errorf("DefaultEvidenceKeyPath() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("no home", func(t *testing.T) {
		t.Setenv("PRIVACYCUT_EVIDENCE_KEY", "")
		t.Setenv("XDG_DATA_HOME", "")
		t.Setenv("HOME", "")
		if _, err := DefaultEvidenceKeyPath(); err == nil {
			t.Error("no error without any location")
		}
	})
}
