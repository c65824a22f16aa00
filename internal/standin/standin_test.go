package standin

import (
	"strings"
	"testing"
)

const export = `{"parts":[{"kind":"block","text":"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\"pcv:abcdefghij:module:abcdefghijklmnopqrst\" owner.team=\"pcv:abcdefghij:team:bbbbbbbbbbbbbbbbbbbb\"\nfinding GO-2022-0288 golang.org/x/net@v0.0.0-20211209124913-491a49abca63 not_affected https://go.dev/issue/50058 owner.module=\"pcv:abcdefghij:module:cccccccccccccccccccc\"\n"}],"profile":"closed-diagnostic@1"}`

func TestRespond(t *testing.T) {
	a, err := Respond([]byte(export), Honest)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Findings) != 2 || a.Findings[0].OwnerModule != "pcv:abcdefghij:module:abcdefghijklmnopqrst" ||
		a.Findings[0].OwnerTeam != "pcv:abcdefghij:team:bbbbbbbbbbbbbbbbbbbb" || a.Findings[0].Action != "upgrade golang.org/x/text to v0.3.8" ||
		a.Findings[1].Severity != "none" || !strings.Contains(a.Summary, "pcv:abcdefghij:module:abcdefghijklmnopqrst") {
		t.Fatalf("honest answer %+v", a)
	}
	inv, _ := Respond([]byte(export), Invent)
	if inv.Findings[0].OwnerModule == a.Findings[0].OwnerModule || len(inv.Findings[0].OwnerModule) != len(a.Findings[0].OwnerModule) {
		t.Fatalf("invented token %q", inv.Findings[0].OwnerModule)
	}
	un, _ := Respond([]byte(export), Unmarked)
	if un.Findings[0].Action != a.Findings[0].OwnerModule {
		t.Fatalf("unmarked %+v", un.Findings[0])
	}
	if _, err := Respond([]byte("not json"), Honest); err == nil {
		t.Fatal("garbage accepted")
	}
}
