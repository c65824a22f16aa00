package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			"cut (privacycut) v1.2.3 go1.26.8"},
		{"checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"cut (privacycut) (devel) 0123abcd+modified 2026-12-01T10:00:00Z go1.26.8"},
		{"no version", debug.BuildInfo{GoVersion: "go1.26.8"}, "cut (privacycut) (devel) go1.26.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := format("cut", &tt.bi); got != tt.want {
				t.Errorf("format = %q, want %q", got, tt.want)
			}
		})
	}
}
