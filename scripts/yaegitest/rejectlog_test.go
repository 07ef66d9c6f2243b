package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"
)

// The rejection line runs under yaegi: written to the interpreter's
// standard output, which Traefik logs at DEBUG, from a middleware keyed by
// the remote address and one keyed by a header, with the key only with
// logKey, and at most once a second per middleware.
func TestPluginRejectionLog(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]any
		header string
		want   string
	}{
		{"inline@file", map[string]any{"window": "1m", "limit": "1"}, "",
			`windowlimit: info: middleware "inline@file" rejected a request; 0 more rejections since the last line; zone holds 1 keys, evicted 0 that still counted`},
		{"keyed@docker", map[string]any{"window": "1m", "limit": "1", "logKey": "true",
			"sourceCriterion": map[string]any{"requestHeaderName": "X-Api-Key"}}, "team-a",
			`windowlimit: info: middleware "keyed@docker" rejected key "team-a"; 0 more rejections since the last line; zone holds 1 keys, evicted 0 that still counted`},
	}
	for _, tt := range tests {
		stdout := &logWriter{}
		b, _ := loadPluginWith(t, interp.Options{Stdout: stdout})
		h := b.build(t, tt.config, tt.name)
		for i := 1; i <= 6; i++ {
			r, err := http.NewRequest(http.MethodGet, "http://example.com/", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.RemoteAddr = "203.0.113.7:1"
			if tt.header != "" {
				r.Header.Set("X-Api-Key", tt.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if want := map[bool]int{true: 200, false: 429}[i == 1]; w.Code != want {
				t.Fatalf("%s request %d: %d, want %d", tt.name, i, w.Code, want)
			}
		}
		got := stdout.text(t)
		// Five rejections: the first logged at once, the rest suppressed
		// unless the test crossed a second.
		lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
		if len(lines) < 1 || len(lines) > 2 || lines[0] != tt.want {
			t.Errorf("%s: standard output %q, want a first line %q and at most one more", tt.name, got, tt.want)
		}
	}
}
