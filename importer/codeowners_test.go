package importer

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCodeOwnersMatch follows the examples of GitHub's CODEOWNERS
// documentation, rewritten, plus the edges of the matcher.
func TestCodeOwnersMatch(t *testing.T) {
	const file = `# comment line
*                   @global-owner1 @global-owner2
*.js                @js-owner #an inline comment
*.go                docs@example.com
*.txt               @octo-org/octocats
/build/logs/        @doctocat
docs/*              docs@example.com
apps/               @octocat
/docs/              @doctocat
/scripts/           @doctocat @octocat
**/logs             @octocat
/apps/github
/deep/**/x.md       @deep
/tree/**            @tree
/Case/              @case
/*.toml             @root-toml
notes/*             @notes
`
	co, err := ParseCodeOwners([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	global := [][2]string{{"person", "@global-owner1"}, {"person", "@global-owner2"}}
	tests := []struct {
		path string
		want [][2]string
	}{
		{"README.md", global},
		{"some/deeply/nested/file.rb", global},
		{"web/app.js", [][2]string{{"person", "@js-owner"}}},
		{"cmd/main.go", [][2]string{{"person", "docs@example.com"}}},
		{"misc/a.txt", [][2]string{{"team", "@octo-org/octocats"}}},
		{"build/logs/today.log", [][2]string{{"person", "@octocat"}}}, // **/logs is later
		{"build/logs", [][2]string{{"person", "@octocat"}}},           // a file named logs
		// A "/" inside a pattern anchors it: docs/* is the root docs only,
		// and (notes/*) only the files directly in it.
		{"x/docs/getting-started.md", global},
		{"notes/a.md", [][2]string{{"person", "@notes"}}},
		{"notes/sub/b.md", global},
		{"x/notes/a.md", global},
		// /docs/ : everything below the root docs directory.
		{"docs/build-app/troubleshooting.md", [][2]string{{"person", "@doctocat"}}},
		{"docs", global}, // a file named docs is not the directory
		{"apps/x/y.rb", [][2]string{{"person", "@octocat"}}},
		{"src/apps/y.rb", [][2]string{{"person", "@octocat"}}},
		{"apps/github/z.rb", nil}, // a later line without owners
		{"scripts/run.sh", [][2]string{{"person", "@doctocat"}, {"person", "@octocat"}}},
		{"a/b/logs/x", [][2]string{{"person", "@octocat"}}},
		{"deep/x.md", [][2]string{{"person", "@deep"}}},
		{"deep/a/b/x.md", [][2]string{{"person", "@deep"}}},
		{"deep/a/b/y.md", global},
		{"tree/a", [][2]string{{"person", "@tree"}}},
		{"tree/a/b/c", [][2]string{{"person", "@tree"}}},
		{"Case/x", [][2]string{{"person", "@case"}}},
		{"case/x", global}, // case-sensitive
		{"a.toml", [][2]string{{"person", "@root-toml"}}},
		{"sub/a.toml", global},
		{"./cmd/../README.md", global},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, co.Owners(tt.path)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.path, d)
		}
	}
}

func TestCodeOwnersRoot(t *testing.T) {
	co, err := ParseCodeOwners([]byte("/ @all\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.go", "a/b/c.go"} {
		if got := co.Owners(p); len(got) != 1 {
			t.Errorf("%s: %v", p, got)
		}
	}
}

func TestCodeOwnersErrors(t *testing.T) {
	tests := []struct {
		in   string
		line int
		want string
	}{
		{"!ZQX/ @a\n", 1, "negated patterns"},
		{"* @a\n[ZQX Section]\n", 2, "character ranges"},
		{"ZQX[ab].go @a\n", 1, "character ranges"},
		{"\\#ZQX @a\n", 1, "escapes"},
		{"* @a\n\n*.go ZQX\n", 3, "owner 1 is not"},
		{"*.go @a @ZQX/x/y\n", 1, "owner 2 is not"},
		{"*.go @\n", 1, "owner 1 is not"},
		{"*.go @a@b\n", 1, "owner 1 is not"},
		{"*.go ZQX@\n", 1, "owner 1 is not"},
		{"a//ZQX @a\n", 1, "empty path segment"},
		{"*.go @a\n*.go @ZQX\xff\n", 2, "invalid UTF-8"},
		{"/a/**/**/**/**/**/**/**/**/**/x @a\n", 1, "too many **"},
	}
	for _, tt := range tests {
		_, err := ParseCodeOwners([]byte(tt.in))
		var ce *CodeOwnersError
		if !errors.As(err, &ce) || ce.Line != tt.line || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err %v, want line %d %q", tt.in, err, tt.line, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "ZQX") {
			t.Errorf("%q: message holds input: %v", tt.in, err)
		}
	}
	_, err := ParseCodeOwners(make([]byte, MaxCodeOwnersBytes+1))
	var ce *CodeOwnersError
	if !errors.As(err, &ce) || ce.Code() != "LIMIT_EXCEEDED" {
		t.Fatalf("large file: %v", err)
	}
}

func TestMatchPath(t *testing.T) {
	tests := []struct {
		file, moduleDir, root string
		want                  string
		ok                    bool
	}{
		{"internal/a.go", "", "", "internal/a.go", true},
		{"internal/a.go", "services/ledger", "", "services/ledger/internal/a.go", true},
		{"/home/d/src/r/internal/a.go", "", "/home/d/src/r", "internal/a.go", true},
		{"/home/d/src/r/internal/a.go", "", "/home/d/src/r/", "internal/a.go", true},
		{"/home/d/src/other/a.go", "", "/home/d/src/r", "", false},
		{"/home/d/src/r/a.go", "", "", "", false},
		{`C:\src\r\cmd\main.go`, "", `C:\src\r`, "cmd/main.go", true},
		{"../escape.go", "", "", "", false},
		{"a/../../escape.go", "", "", "", false},
	}
	for _, tt := range tests {
		got, ok := matchPath(tt.file, tt.moduleDir, tt.root)
		if got != tt.want || ok != tt.ok {
			t.Errorf("matchPath(%q, %q, %q) = %q, %v; want %q, %v", tt.file, tt.moduleDir, tt.root, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFuncName(t *testing.T) {
	for _, tt := range [][3]string{
		{"", "Parse", "Parse"},
		{"*Server", "Handle", "(*Server).Handle"},
		{"Server", "Handle", "Server.Handle"},
		{"*List[T]", "Push", "(*List[T]).Push"},
		{"Pair[K, V]", "Swap", "Pair[K, V].Swap"},
		{"*T", "", ""},
	} {
		if got := funcName(tt[0], tt[1]); got != tt[2] {
			t.Errorf("funcName(%q, %q) = %q, want %q", tt[0], tt[1], got, tt[2])
		}
	}
}

func TestSemver(t *testing.T) {
	ordered := []string{"0.0.0-20220722155237-a158d28d115b", "0.0.0-20220906165146-f3363e06e74c", "0.4.0-alpha", "0.4.0-alpha.1", "0.4.0-alpha.beta", "0.4.0-beta.2", "0.4.0-beta.11", "0.4.0", "0.10.0", "1.0.0+meta"}
	for i := range ordered {
		for j := range ordered {
			a, ok1 := parseSemver(ordered[i])
			b, ok2 := parseSemver(ordered[j])
			if !ok1 || !ok2 {
				t.Fatalf("parse %q %q", ordered[i], ordered[j])
			}
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareSemver(a, b); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	for _, bad := range []string{"", "1", "1.2", "01.2.3", "1.2.3-", "1.2.3-a..b", "v1.2.3", "1.2.x"} {
		if _, ok := parseSemver(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestFixedFor(t *testing.T) {
	e := &osvEntry{affected: []osvAffected{{module: "m", ecosystem: "Go", ranges: [][]osvEvent{{
		{introduced: "0"}, {fixed: "1.2.0"}, {introduced: "1.4.0"}, {fixed: "1.4.3"}, {introduced: "2.0.0"}, {lastAffected: "2.1.0"},
	}}}}}
	for _, tt := range [][2]string{
		{"v1.1.9", "v1.2.0"}, {"v1.2.0", ""}, {"v1.3.0", ""}, {"v1.4.0", "v1.4.3"}, {"v1.4.2", "v1.4.3"},
		{"v1.4.3", ""}, {"v2.0.5", ""}, {"v9.0.0", ""}, {"vx", ""},
	} {
		if got := fixedFor(e, "m", tt[0]); got != tt[1] {
			t.Errorf("fixedFor(%s) = %q, want %q", tt[0], got, tt[1])
		}
	}
	if got := fixedFor(e, "other", "v1.0.0"); got != "" {
		t.Errorf("other module: %q", got)
	}
}

func TestGoPURL(t *testing.T) {
	for _, tt := range []struct {
		in, mod, ver string
		ok           bool
	}{
		{"pkg:golang/golang.org%2Fx%2Fnet@v0.15.0", "golang.org/x/net", "v0.15.0", true},
		{"pkg:golang/golang.org/x/text@v0.3.7", "golang.org/x/text", "v0.3.7", true},
		{"pkg:golang/github.com/a/b@v1.0.0%2Bincompatible?type=module#sub/dir", "github.com/a/b", "v1.0.0+incompatible", true},
		{"pkg:golang/stdlib@v1.19.2", "stdlib", "v1.19.2", true},
		{"pkg:npm/minimist@1.2.5", "", "", false},
		{"pkg:golang/golang.org/x/text", "", "", false},
		{"pkg:golang/golang.org/x/text@", "", "", false},
		{"pkg:golang/%zz@v1", "", "", false},
		{"Unknown Product", "", "", false},
	} {
		m, v, ok := goPURL(tt.in)
		if m != tt.mod || v != tt.ver || ok != tt.ok {
			t.Errorf("goPURL(%q) = %q %q %v", tt.in, m, v, ok)
		}
	}
}
