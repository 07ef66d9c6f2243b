package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func TestKeySource(t *testing.T) {
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name     string
		template string
		v4, v6   int
		header   string // X-Key
		want     string
	}{
		{"default is the client IP", "", 0, 0, "", "203.0.113.7"},
		{"client_ip placeholder", "{http.vars.client_ip}", 0, 0, "", "203.0.113.7"},
		{"static", "everyone", 0, 0, "", "everyone"},
		{"one placeholder", "{http.request.header.X-Key}", 0, 0, "abc", "abc"},
		{"composite", "{http.request.header.X-Key}/{http.request.uri.path}", 0, 0, "abc", "abc//p"},
		{"composite with empty part", "{http.request.header.X-Key}/{http.request.uri.path}", 0, 0, "", "//p"},
		{"empty falls back to the client IP", "{http.request.header.X-Key}", 0, 0, "", emptyKeyPrefix + "203.0.113.7"},
		{"empty fallback is grouped too", "{http.request.header.X-Key}", 24, 0, "", emptyKeyPrefix + "203.0.113.0/24"},
		{"an IP key is grouped", "{http.request.header.X-Key}", 16, 0, "198.51.77.9", "198.51.0.0/16"},
		{"an IPv6 key is grouped", "{http.request.header.X-Key}", 0, 48, "2001:db8:1:2::3", "2001:db8:1::/48"},
		{"a non-IP key is not grouped", "{http.request.header.X-Key}", 24, 64, "abc", "abc"},
		{"an IPv6 key is grouped by /64 by default", "{http.request.header.X-Key}", 0, 0, "2001:db8:1:2::3", "2001:db8:1:2::/64"},
		{"128 keeps IPv6 addresses apart", "{http.request.header.X-Key}", 0, 128, "2001:db8:1:2::3", "2001:db8:1:2::3"},
		{"an IPv4-mapped key is IPv4", "{http.request.header.X-Key}", 0, 0, "::ffff:198.51.77.9", "198.51.77.9"},
		{"a non-IP key with a colon is kept", "{http.request.header.X-Key}", 0, 0, "user:42", "user:42"},
		{"an escaped brace is literal", `\{{http.request.header.X-Key}\}`, 0, 0, "abc", "{abc}"},
		{"a long key is hashed", "{http.request.header.X-Key}", 0, 0, long, "sha256:"},
		{"a key cannot spell the fallback", "{http.request.header.X-Key}", 0, 0, "\x00client_ip:203.0.113.7", "\x00\x00client_ip:203.0.113.7"},
		{"a key that starts with NUL gets one more", "{http.request.header.X-Key}", 0, 0, "\x00\x00x", "\x00\x00\x00x"},
		{"a NUL further on is kept", "{http.request.header.X-Key}", 0, 0, "a\x00", "a\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://example.com/p", nil)
			if tt.header != "" {
				r.Header.Set("X-Key", tt.header)
			}
			vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
			*r = *r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
			repl := caddyhttp.NewTestReplacer(r)
			k := newKeySource(tt.template, tt.v4, tt.v6)
			got := k.of(r, repl)
			if strings.HasSuffix(tt.want, ":") {
				if !strings.HasPrefix(got, tt.want) || len(got) > 256 {
					t.Errorf("key %q, want %q followed by a digest", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("key %q, want %q", got, tt.want)
			}
		})
	}
}

// TestKeyReadsClientIP: a key reads the client IP when its template holds
// it or may come out empty (the fallback); the connection's address and
// literal text are never empty.
func TestKeyReadsClientIP(t *testing.T) {
	for template, want := range map[string]bool{
		"":                            true,
		"{http.vars.client_ip}":       true,
		"user:{http.vars.client_ip}":  true,
		"{http.request.header.X-Key}": true,
		"{http.request.header.A}{http.request.cookie.b}": true,
		"{http.request.remote.host}":                     false,
		"{http.request.remote.host/24}":                  false,
		"{http.request.header.A}{http.request.remote}":   false,
		"everyone":                      false,
		"k:{http.request.header.X-Key}": false,
		"{http.request.header.X-Key}/{http.request.uri.path}": false,
		`\{{http.request.header.X-Key}\}`:                     false,
	} {
		k := newKeySource(template, 0, 0)
		if got := k.readsClientIP(); got != want {
			t.Errorf("key %q reads the client IP: %v, want %v", template, got, want)
		}
	}
}
