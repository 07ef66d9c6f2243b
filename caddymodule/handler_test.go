package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// newHandler provisions a handler from its JSON config and releases it when
// the test ends. The Caddy context it returns carries the metrics registry.
func newHandler(t testing.TB, config string) (*Handler, caddy.Context) {
	t.Helper()
	h := new(Handler)
	if err := json.Unmarshal([]byte(config), h); err != nil {
		t.Fatalf("decoding config: %v", err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		h.Cleanup()
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	if err := h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	h.logger = zap.NewNop()
	return h, ctx
}

// served is what one request through the handler produced.
type served struct {
	passed bool // the next handler ran
	status int  // 429 for a rejection, 200 when passed
	header http.Header
	repl   *caddy.Replacer
}

// call sends one request from clientIP through h, as Caddy's server would
// hand it over: with a replacer and the client IP in the request's vars.
func serve(t *testing.T, h *Handler, clientIP, path string, header ...string) served {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://example.com"+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	vars := map[string]any{caddyhttp.ClientIPVarKey: clientIP}
	*r = *r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	repl := caddyhttp.NewTestReplacer(r)
	w := httptest.NewRecorder()
	res := served{repl: repl}
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		res.passed = true
		return nil
	})
	err := h.ServeHTTP(w, r, next)
	res.header = w.Header()
	switch {
	case err == nil:
		res.status = http.StatusOK
	default:
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) {
			t.Fatalf("ServeHTTP returned %v, want a caddyhttp.HandlerError", err)
		}
		res.status = he.StatusCode
	}
	if res.passed == (res.status != http.StatusOK) {
		t.Fatalf("next ran: %v, but status %d", res.passed, res.status)
	}
	return res
}

// statuses sends n requests and returns their statuses.
func statuses(t *testing.T, h *Handler, n int, clientIP, path string, header ...string) []int {
	t.Helper()
	var got []int
	for range n {
		got = append(got, serve(t, h, clientIP, path, header...).status)
	}
	return got
}

func TestLimitPerClientIP(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit":3}}}`)
	got := statuses(t, h, 4, "203.0.113.7", "/")
	if want := []int{200, 200, 200, 429}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if got := statuses(t, h, 1, "203.0.113.8", "/"); got[0] != 200 {
		t.Errorf("another client got %d, want 200: clients share no count", got[0])
	}
}

func TestRejectionHeaders(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit":2}}}`)
	first := serve(t, h, "203.0.113.7", "/")
	if got := first.header.Get("X-RateLimit-Limit"); got != "2" {
		t.Errorf("X-RateLimit-Limit %q, want 2", got)
	}
	if got := first.header.Get("X-RateLimit-Remaining"); got != "1" {
		t.Errorf("X-RateLimit-Remaining %q, want 1", got)
	}
	if first.header.Get("Retry-After") != "" {
		t.Error("an allowed request carries Retry-After")
	}
	serve(t, h, "203.0.113.7", "/")
	denied := serve(t, h, "203.0.113.7", "/")
	if denied.status != 429 {
		t.Fatalf("status %d, want 429", denied.status)
	}
	if got := denied.header.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining %q, want 0", got)
	}
	retry, err := strconv.Atoi(denied.header.Get("Retry-After"))
	if err != nil || retry <= 0 || retry > 66 {
		t.Errorf("Retry-After %q, want 1..66 seconds (window plus one sub-window at most)", denied.header.Get("Retry-After"))
	}
	reset, err := strconv.Atoi(denied.header.Get("X-RateLimit-Reset"))
	if err != nil || reset <= 0 || reset > 66 {
		t.Errorf("X-RateLimit-Reset %q, want 1..66 seconds", denied.header.Get("X-RateLimit-Reset"))
	}
}

func TestHeaderModes(t *testing.T) {
	tests := []struct {
		mode       string
		present    []string
		absent     []string
		rateLimitV string
	}{
		{"legacy", []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}, []string{"RateLimit", "RateLimit-Policy"}, ""},
		{"ietf", []string{"RateLimit", "RateLimit-Policy"}, []string{"X-RateLimit-Limit"}, `"api";r=4;t=`},
		{"both", []string{"X-RateLimit-Limit", "RateLimit", "RateLimit-Policy"}, nil, `"api";r=4;t=`},
		{"none", nil, []string{"X-RateLimit-Limit", "RateLimit", "RateLimit-Policy"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			h, _ := newHandler(t, `{"headers":"`+tt.mode+`","rate_limits":{"api":{"window":"1m","limit":5}}}`)
			res := serve(t, h, "203.0.113.7", "/")
			for _, name := range tt.present {
				if res.header.Get(name) == "" {
					t.Errorf("%s missing", name)
				}
			}
			for _, name := range tt.absent {
				if v := res.header.Get(name); v != "" {
					t.Errorf("%s: %q, want none", name, v)
				}
			}
			if tt.rateLimitV != "" && !strings.HasPrefix(res.header.Get("RateLimit"), tt.rateLimitV) {
				t.Errorf("RateLimit %q, want prefix %q", res.header.Get("RateLimit"), tt.rateLimitV)
			}
		})
	}
	t.Run("none still sends Retry-After", func(t *testing.T) {
		h, _ := newHandler(t, `{"headers":"none","rate_limits":{"api":{"window":"1m","limit":1}}}`)
		serve(t, h, "203.0.113.7", "/")
		res := serve(t, h, "203.0.113.7", "/")
		if res.status != 429 || res.header.Get("Retry-After") == "" {
			t.Errorf("status %d, Retry-After %q; want 429 with Retry-After", res.status, res.header.Get("Retry-After"))
		}
	})
}

func TestZonesAreTakenTogether(t *testing.T) {
	// Zone "site" allows 5 requests per client, zone "b" 2 requests to /b.
	h, _ := newHandler(t, `{"rate_limits":{
		"site":{"window":"1m","limit":5},
		"b":{"window":"1m","limit":2,"match":[{"path":["/b"]}]}}}`)
	got := statuses(t, h, 4, "203.0.113.7", "/b")
	if want := []int{200, 200, 429, 429}; !slices.Equal(got, want) {
		t.Fatalf("/b statuses %v, want %v", got, want)
	}
	// The two rejected requests must not have used up "site": 3 remain.
	got = statuses(t, h, 4, "203.0.113.7", "/other")
	if want := []int{200, 200, 200, 429}; !slices.Equal(got, want) {
		t.Fatalf("/other statuses %v, want %v: a request rejected by one zone was counted in another", got, want)
	}
}

func TestRejectingZoneSpeaks(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{
		"loose":{"window":"1m","limit":100},
		"tight":{"window":"1m","limit":1}}}`)
	serve(t, h, "203.0.113.7", "/")
	res := serve(t, h, "203.0.113.7", "/")
	if res.status != 429 {
		t.Fatalf("status %d, want 429", res.status)
	}
	if got := res.header.Get("X-RateLimit-Limit"); got != "1" {
		t.Errorf("X-RateLimit-Limit %q, want the tight zone's 1", got)
	}
	if got, _ := res.repl.GetString("http.rate_limit.zone"); got != "tight" {
		t.Errorf("{http.rate_limit.zone} = %q, want tight", got)
	}
}

func TestPlaceholders(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit":1}}}`)
	ok := serve(t, h, "203.0.113.7", "/")
	if _, set := ok.repl.Get("http.rate_limit.zone"); set {
		t.Error("placeholders set on an allowed request")
	}
	res := serve(t, h, "203.0.113.7", "/")
	want := map[string]string{
		"http.rate_limit.zone":          "api",
		"http.rate_limit.exceeded.name": "api",
		"http.rate_limit.limit":         "1",
	}
	for name, v := range want {
		if got, _ := res.repl.GetString(name); got != v {
			t.Errorf("{%s} = %q, want %q", name, got, v)
		}
	}
	for _, name := range []string{"http.rate_limit.retry_after", "http.rate_limit.reset"} {
		got, _ := res.repl.GetString(name)
		if n, err := strconv.Atoi(got); err != nil || n <= 0 || n > 66 {
			t.Errorf("{%s} = %q, want 1..66 seconds", name, got)
		}
	}
	if got, _ := res.repl.GetString("http.rate_limit.retry_after"); got != res.header.Get("Retry-After") {
		t.Errorf("{http.rate_limit.retry_after} %q differs from Retry-After %q", got, res.header.Get("Retry-After"))
	}
}

func TestDryRun(t *testing.T) {
	h, ctx := newHandler(t, `{"dry_run":true,"rate_limits":{"dry":{"window":"1m","limit":1}}}`)
	reg := ctx.GetMetricsRegistry()
	dryBefore, deniedBefore := counterValue(t, reg, "dry", decisionDryRun), counterValue(t, reg, "dry", decisionDenied)
	serve(t, h, "203.0.113.7", "/")
	res := serve(t, h, "203.0.113.7", "/")
	if !res.passed {
		t.Fatal("dry_run blocked a request")
	}
	if got := res.header.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining %q, want 0", got)
	}
	if got := res.header.Get("Retry-After"); got != "" {
		t.Errorf("Retry-After %q on a request that passed", got)
	}
	if got, _ := res.repl.GetString("http.rate_limit.zone"); got != "dry" {
		t.Errorf("{http.rate_limit.zone} = %q, want dry", got)
	}
	if got := counterValue(t, reg, "dry", decisionDryRun) - dryBefore; got != 1 {
		t.Errorf("dry_run counter +%v, want +1", got)
	}
	if got := counterValue(t, reg, "dry", decisionDenied) - deniedBefore; got != 0 {
		t.Errorf("denied counter +%v, want +0 in dry_run", got)
	}
}

func TestEmptyKeyFallsBackToClientIP(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"key":"{http.request.header.X-API-Key}","window":"1m","limit":1}}}`)
	if got := statuses(t, h, 2, "203.0.113.7", "/"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("without a key, one client got %v, want [200 429]: a missing key must not bypass the limit", got)
	}
	if got := statuses(t, h, 1, "203.0.113.8", "/"); got[0] != 200 {
		t.Errorf("without a key, another client got %d, want 200: the fallback is per client IP", got[0])
	}
	if got := statuses(t, h, 2, "203.0.113.7", "/", "X-API-Key", "k1"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("with a key: %v, want [200 429]", got)
	}
	if got := statuses(t, h, 1, "198.51.100.1", "/", "X-API-Key", "203.0.113.7"); got[0] != 200 {
		t.Errorf("a key equal to a client IP got %d, want 200: fallback keys live apart", got[0])
	}
}

func TestStaticKeySharesOneCount(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"all":{"key":"static","window":"1m","limit":2}}}`)
	var got []int
	for _, ip := range []string{"203.0.113.1", "203.0.113.2", "2001:db8::1"} {
		got = append(got, serve(t, h, ip, "/").status)
	}
	if want := []int{200, 200, 429}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

func TestIPPrefixGrouping(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"net":{"window":"1m","limit":1,"ipv4_prefix":24,"ipv6_prefix":64}}}`)
	tests := []struct {
		ip   string
		want int
	}{
		{"203.0.113.7", 200},
		{"203.0.113.99", 429}, // same /24
		{"203.0.114.7", 200},
		{"2001:db8:1:2::1", 200},
		{"2001:db8:1:2:ffff::9", 429}, // same /64
		{"2001:db8:1:3::1", 200},
	}
	for _, tt := range tests {
		if got := serve(t, h, tt.ip, "/").status; got != tt.want {
			t.Errorf("%s: %d, want %d", tt.ip, got, tt.want)
		}
	}
}

func TestMaxEventsAlias(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"old":{"key":"static","window":"1m","max_events":1}}}`)
	if got := statuses(t, h, 2, "203.0.113.7", "/"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("statuses %v, want [200 429]", got)
	}
}

func TestCost(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit":5,"cost":2}}}`)
	if got := statuses(t, h, 3, "203.0.113.7", "/"); !slices.Equal(got, []int{200, 200, 429}) {
		t.Errorf("statuses %v, want [200 200 429]", got)
	}
}

func TestUnmatchedRequestPassesUntouched(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit":1,"match":[{"path":["/api/*"]}]}}}`)
	for range 3 {
		res := serve(t, h, "203.0.113.7", "/static")
		if res.status != 200 || res.header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("unmatched request: status %d, headers %v", res.status, res.header)
		}
	}
	if got := statuses(t, h, 2, "203.0.113.7", "/api/x"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("/api statuses %v, want [200 429]", got)
	}
}

func TestJitter(t *testing.T) {
	h, _ := newHandler(t, `{"jitter":1,"rate_limits":{"api":{"key":"static","window":"1m","limit":1}}}`)
	serve(t, h, "203.0.113.7", "/")
	seen := make(map[string]bool)
	for range 50 {
		res := serve(t, h, "203.0.113.7", "/")
		retry, err := strconv.Atoi(res.header.Get("Retry-After"))
		if err != nil || retry < 55 || retry > 133 {
			t.Fatalf("Retry-After %q, want between the 60-66s wait and twice it", res.header.Get("Retry-After"))
		}
		seen[res.header.Get("Retry-After")] = true
	}
	if len(seen) < 2 {
		t.Errorf("50 jittered Retry-After values were all %v", seen)
	}
}

// expectProvisionError provisions a handler from its JSON config, as Caddy
// does without a Caddyfile, cleans it up, and checks that Provision failed
// with an error containing want.
func expectProvisionError(t *testing.T, config, want string) {
	t.Helper()
	h := new(Handler)
	if err := json.Unmarshal([]byte(config), h); err != nil {
		t.Fatalf("%s: %v", config, err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	err := h.Provision(ctx)
	h.Cleanup()
	cancel()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want one containing %q", config, err, want)
	}
}

func TestProvisionErrors(t *testing.T) {
	tests := []struct {
		config string
		want   string
	}{
		{`{}`, "no zone defined"},
		{`{"rate_limits":{"a":null}}`, `zone "a": zone has no settings`},
		{`{"rate_limits":{"":{"window":"1m","limit":1}}}`, "zone name must not be empty"},
		{`{"headers":"loud","rate_limits":{"a":{"window":"1m","limit":1}}}`, `unknown headers mode "loud"`},
		{`{"max_keys":-1,"rate_limits":{"a":{"window":"1m","limit":1}}}`, "max_keys must not be negative"},
		{`{"sweep_interval":"-1s","rate_limits":{"a":{"window":"1m","limit":1}}}`, "sweep_interval must not be negative"},
		{`{"rate_limits":{"a":{"limit":1}}}`, `zone "a": window is required`},
		{`{"rate_limits":{"a":{"window":"1m"}}}`, `zone "a": limit is required`},
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"max_events":1}}}`, "limit and max_events are the same setting"},
		{`{"rate_limits":{"a":{"window":"1m","limit":-1}}}`, "limit: must be positive"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"algorithm":"token"}}}`, `unknown algorithm "token"`},
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"ipv4_prefix":40}}}`, "ipv4_prefix"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"ipv6_prefix":129}}}`, "ipv6_prefix"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"match":[{"nope":{}}]}}}`, "loading matchers"},
	}
	for _, tt := range tests {
		expectProvisionError(t, tt.config, tt.want)
	}
}

func TestValidateJitter(t *testing.T) {
	// 1e10 overflowed the delay into a negative Retry-After.
	for _, j := range []float64{-0.1, 1.01, 1e10} {
		h := Handler{Jitter: j}
		if err := h.Validate(); err == nil {
			t.Errorf("jitter %v accepted", j)
		}
	}
	if err := (&Handler{Jitter: 0.5}).Validate(); err != nil {
		t.Errorf("jitter 0.5: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	h, ctx := newHandler(t, `{"rate_limits":{"m":{"window":"1m","limit":2}}}`)
	reg := ctx.GetMetricsRegistry()
	before := map[string]float64{}
	for _, d := range []string{decisionAllowed, decisionDenied} {
		before[d] = counterValue(t, reg, "m", d)
	}
	statuses(t, h, 3, "203.0.113.7", "/")
	if got := counterValue(t, reg, "m", decisionAllowed) - before[decisionAllowed]; got != 2 {
		t.Errorf("allowed +%v, want +2", got)
	}
	if got := counterValue(t, reg, "m", decisionDenied) - before[decisionDenied]; got != 1 {
		t.Errorf("denied +%v, want +1", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "caddy_http_rate_limit_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "zone" && l.GetName() != "decision" {
					t.Errorf("%s has label %s; only zone and decision are allowed", f.GetName(), l.GetName())
				}
			}
		}
	}
	if got := gaugeValue(t, reg, "caddy_http_rate_limit_keys", "m"); got != 1 {
		t.Errorf("caddy_http_rate_limit_keys{zone=m} = %v, want 1", got)
	}

	// A second handler in the same config, and a reload's new registry,
	// register the same collectors without error.
	h2 := &Handler{RateLimits: map[string]*Zone{"m2": {Window: caddy.Duration(60e9), Limit: 1}}}
	if err := h2.Provision(ctx); err != nil {
		t.Fatalf("second handler in the same registry: %v", err)
	}
	h2.Cleanup()
	newHandler(t, `{"rate_limits":{"m":{"window":"1m","limit":2}}}`)
}

// counterValue returns caddy_http_rate_limit_requests_total{zone, decision}.
func counterValue(t *testing.T, reg *prometheus.Registry, zone, decision string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "caddy_http_rate_limit_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m.GetLabel(), "zone") == zone && labelValue(m.GetLabel(), "decision") == decision {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name, zone string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m.GetLabel(), "zone") == zone {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

type labelPair interface {
	GetName() string
	GetValue() string
}

func labelValue[L labelPair](labels []L, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
