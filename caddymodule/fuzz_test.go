package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// The fuzz targets of this file run in scripts/test.sh for a bounded time;
// their seeds are in testdata/fuzz/<target>/.

// FuzzCaddyfile: any text as the body of a rate_limit block either fails to
// parse or gives a handler that provisions, validates and cleans up, or
// fails to, with an error; never a panic.
func FuzzCaddyfile(f *testing.F) {
	f.Add("zone api {\n\twindow 1m\n\tlimit 100\n}")
	f.Fuzz(func(t *testing.T, body string) {
		// Text Caddy's lexer refuses never reaches the module (and
		// caddyfile.NewTestDispenser would exit the process on it).
		tokens, err := caddyfile.Tokenize([]byte("rate_limit {\n"+body+"\n}"), "Caddyfile")
		if err != nil {
			return
		}
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens)); err != nil {
			return
		}
		provisionOnce(t, h)
	})
}

// FuzzJSON: any bytes as the handler's JSON config either fail to decode
// or provision, validate and clean up, or fail to, with an error.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"rate_limits":{"api":{"window":"1m","limit":100}}}`))
	f.Fuzz(func(t *testing.T, config []byte) {
		h := new(Handler)
		if err := json.Unmarshal(config, h); err != nil {
			return
		}
		provisionOnce(t, h)
	})
}

// provisionOnce provisions h as Caddy would, then releases it. A Redis
// store is only checked, never connected: the fuzzer must not reach a
// server, least of all one on the default port; persist is only checked.
func provisionOnce(t *testing.T, h *Handler) {
	if h.Redis != nil {
		h.Redis.check()
		h.Redis, h.OnStoreError = nil, ""
	}
	if h.Persist != nil {
		// Checked, never used: the fuzzer must not read or write
		// snapshots in a directory it made up.
		h.Persist.plan(true)
		h.Persist = nil
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	err := h.Provision(ctx)
	if err == nil {
		err = h.Validate()
	}
	if cerr := h.Cleanup(); cerr != nil {
		t.Fatalf("Cleanup after Provision (%v): %v", err, cerr)
	}
}

// FuzzKeySource: a zone's key, from any template, placeholder value and
// client IP, never panics, is at most httplimit.MaxKeyLength bytes, and is
// the same for the same request.
func FuzzKeySource(f *testing.F) {
	f.Add("{http.request.header.X-K}", "abc", "203.0.113.7", 0, 0)
	f.Fuzz(func(t *testing.T, template, value, ip string, v4, v6 int) {
		// Caddy's client_ip variable is always an address it parsed.
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			return
		}
		ip = addr.WithZone("").String()
		// Prefixes as the zone's validation bounds them.
		k := newKeySource(template, nonNeg(v4)%33, nonNeg(v6)%129)
		r := httptest.NewRequest(http.MethodGet, "http://example.com/p?k="+url.QueryEscape(value), nil)
		r.Host = value
		r.Header["X-K"] = []string{value}
		vars := map[string]any{caddyhttp.ClientIPVarKey: ip}
		*r = *r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
		repl := caddyhttp.NewTestReplacer(r)
		got := k.of(r, repl)
		if len(got) > httplimit.MaxKeyLength {
			t.Fatalf("key of %d bytes: %q", len(got), got)
		}
		if again := k.of(r, repl); again != got {
			t.Fatalf("key %q, then %q for the same request", got, again)
		}
	})
}

func nonNeg(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}
