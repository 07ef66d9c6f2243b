package traefikplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newChecked calls New and returns, for a misconfigured middleware, the
// error its log line names, as New returned it before it refused
// requests instead: the tests of bad values read it from here.
func newChecked(ctx context.Context, next http.Handler, c *Config, name string) (http.Handler, error) {
	h, err := New(ctx, next, c, name)
	if err != nil {
		return nil, err
	}
	if m, ok := h.(*misconfigured); ok {
		return nil, &configError{name: m.name, err: m.err}
	}
	return h, nil
}

// configError is the error newChecked returns.
type configError struct {
	name string
	err  error
}

func (e *configError) Error() string {
	return "windowlimit middleware " + strconv.Quote(e.name) + ": " + e.err.Error()
}

func (e *configError) Unwrap() error { return e.err }

// captureErrorLog sends errorLog's lines to a buffer until the test ends.
func captureErrorLog(t *testing.T) *syncBuffer {
	t.Helper()
	var b syncBuffer
	old := errorLog
	errorLog = &b
	t.Cleanup(func() { errorLog = old })
	return &b
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu chan struct{}
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	if s.mu == nil {
		s.mu = make(chan struct{}, 1)
	}
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	if s.mu == nil {
		s.mu = make(chan struct{}, 1)
	}
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.String()
}

// A misconfigured middleware never lets a request through: New returns
// a handler (an error would disable the router, and another router
// matching the same path would serve it unlimited) that answers 500,
// never calls the next handler, and says so in the body; the log names
// the option at load, and at most once a minute after.
func TestNewMisconfiguredRefusesEveryRequest(t *testing.T) {
	logged := captureErrorLog(t)
	var reached int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { atomic.AddInt32(&reached, 1) })
	for _, tt := range []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{"window": "1m", "limt": "10"}, `middleware "api-limit@file" is misconfigured: unknown option limt; did you mean limit?`},
		{map[string]any{"window": "1m", "limit": "ten"}, `middleware "api-limit@file" is misconfigured: limit: must be a whole number in decimal, got "ten"`},
		{map[string]any{"window": "1m", "limit": "10", "redis": "127.0.0.1:6379"}, `redis: must be a block of options, got "127.0.0.1:6379"`},
		{map[string]any{"window": "1m", "limit": "10", "maxKeys": 1e12}, "maxKeys: "},
	} {
		before := len(logged.String())
		h, err := New(context.Background(), next, &Config{Options: tt.options}, "api-limit@file")
		if err != nil || h == nil {
			t.Fatalf("%v: New returned %v, %v; want a handler and no error", tt.options, h, err)
		}
		line := logged.String()[before:]
		if !strings.HasPrefix(line, "windowlimit: error: ") || !strings.Contains(line, tt.want) ||
			!strings.Contains(line, "refused with 500 until the configuration is fixed") {
			t.Errorf("%v: log %q, want an error line containing %q", tt.options, line, tt.want)
		}
		for i := 0; i < 3; i++ {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/login", nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != http.StatusInternalServerError || !strings.Contains(string(body), "rate limit misconfigured") {
				t.Fatalf("%v: request %d answered %d %q, want 500 saying the limit is misconfigured", tt.options, i, rec.Code, body)
			}
			if rec.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Fatalf("Content-Length %q for a body of %d bytes", rec.Header().Get("Content-Length"), len(body))
			}
		}
		if strings.Count(logged.String()[before:], "\n") != 1 {
			t.Errorf("%v: requests within a minute of New logged again: %q", tt.options, logged.String()[before:])
		}
	}
	if n := atomic.LoadInt32(&reached); n != 0 {
		t.Fatalf("the next handler was called %d times", n)
	}
	forget("api-limit@file")
}

// A misconfigured middleware logs again once a minute has passed since
// its last line, when a request is refused.
func TestMisconfiguredLogsOnceAMinute(t *testing.T) {
	logged := captureErrorLog(t)
	h, _ := New(context.Background(), okHandler, &Config{Options: map[string]any{"windw": "1m"}}, "typo@file")
	m := h.(*misconfigured)
	atomic.StoreInt64(&m.lastLog, time.Now().Add(-misconfiguredLogEvery).Unix())
	for i := 0; i < 5; i++ {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	if n := strings.Count(logged.String(), "(a request was refused)"); n != 1 {
		t.Fatalf("%d lines after a minute and 5 requests, want 1: %q", n, logged.String())
	}
}

// Numbers are read in decimal as written, where Traefik's own decoder
// reads "010" as 8; what is not a decimal whole number, or too large, is
// refused with its option.
func TestDecodeNumbersAsWritten(t *testing.T) {
	for _, tt := range []struct {
		v       any
		want    int64
		wantErr string
	}{
		{"010", 10, ""},
		{" 25 ", 25, ""},
		{"", 0, ""},
		{float64(30), 30, ""},
		{int64(7), 7, ""},
		{"0x10", 0, `must be a whole number in decimal, got "0x10"`},
		{"1e3", 0, `must be a whole number in decimal, got "1e3"`},
		{"1_000", 0, `must be a whole number in decimal`},
		{1.5, 0, "must be a whole number, got 1.5"},
		{"99999999999999999999", 0, "too large"},
		{1e300, 0, "too large"},
		{true, 0, "must be a whole number, got true"},
		{[]any{"1"}, 0, "must be a whole number, got a list"},
	} {
		n, err := intValue("limit", tt.v)
		switch {
		case tt.wantErr == "" && (err != nil || n != tt.want):
			t.Errorf("%#v: %d, %v; want %d", tt.v, n, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), "limit: ") || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%#v: %d, %v; want an error containing %q", tt.v, n, err, tt.wantErr)
		}
	}
	c, err := (&Config{Options: map[string]any{"window": "1m", "limit": "010", "cost": "02",
		"sourceCriterion": map[string]any{"ipStrategy": map[string]any{"depth": "010"}}}}).decoded()
	if err != nil || c.Limit != 10 || c.Cost != 2 || c.SourceCriterion.IPStrategy.Depth != 10 {
		t.Fatalf("decoded %+v, %v; want limit 10, cost 2, depth 10", c, err)
	}
}

// Every option decodes into its field from the strings labels give, and
// the configuration Traefik shares is left as it was.
func TestDecodeEveryOption(t *testing.T) {
	options := map[string]any{
		"window": "1m", "subWindow": "10s", "limit": "100", "algorithm": "strict", "cost": "2",
		"headers": "both", "maxKeys": "5000", "dryRun": "true", "logKey": "TRUE", "statusCode": "503",
		"message": "slow down", "countStatus": "401,403", "overrides": []any{"k=5", "10.0.0.0/8=unlimited"},
		"onStoreError": "local",
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key", "requestHost": "false",
			"ipStrategy": map[string]any{"depth": "2", "excludedIPs": "10.0.0.1,10.0.0.2", "ipv6Subnet": "56"}},
		"redis": map[string]any{"endpoints": "a:1,b:2", "username": "u", "password": "p", "db": "3",
			"dialTimeout": "1s", "readTimeout": "2s", "writeTimeout": "3s", "poolSize": "9", "maxActiveConns": "8",
			"minIdleConns": "1", "keyPrefix": "x:", "lease": "off",
			"tls": map[string]any{"ca": "/ca", "cert": "/c", "key": "/k", "insecureSkipVerify": "1"}},
		"persist": map[string]any{"directory": "/d", "interval": "5s"},
	}
	in := &Config{Options: options}
	c, err := in.decoded()
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Window: "1m", SubWindow: "10s", Limit: 100, Algorithm: "strict", Cost: 2, Headers: "both",
		MaxKeys: 5000, DryRun: true, LogKey: true, StatusCode: 503, Message: "slow down",
		CountStatus: []string{"401", "403"}, Overrides: []string{"k=5", "10.0.0.0/8=unlimited"}, OnStoreError: "local",
		SourceCriterion: &SourceCriterion{RequestHeaderName: "X-Key",
			IPStrategy: &IPStrategy{Depth: 2, ExcludedIPs: []string{"10.0.0.1", "10.0.0.2"}, IPv6Subnet: 56}},
		Redis: &RedisConfig{Endpoints: []string{"a:1", "b:2"}, Username: "u", Password: "p", DB: 3,
			DialTimeout: "1s", ReadTimeout: "2s", WriteTimeout: "3s", PoolSize: 9, MaxActiveConns: 8, MinIdleConns: 1,
			KeyPrefix: "x:", Lease: "off", TLS: &RedisTLS{CA: "/ca", Cert: "/c", Key: "/k", InsecureSkipVerify: true}},
		Persist: &PersistConfig{Directory: "/d", Interval: "5s"},
	}
	got, _ := json.Marshal(c)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Fatalf("decoded:\n%s\nwant:\n%s", got, exp)
	}
	if in.Limit != 0 || in.Redis != nil || len(in.Options) != len(options) {
		t.Fatalf("decoded modified the shared configuration: %+v", in)
	}
}
