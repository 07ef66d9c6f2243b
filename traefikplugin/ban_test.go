package traefikplugin

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// banConfig is limit 1 per second with a ban of an hour: the second
// request is banned, and its headers name the ban's end, an hour, where
// the window alone says a second.
func banConfig() *Config {
	return &Config{Window: "1s", SubWindow: "100ms", Limit: 1, Ban: "1h", Headers: "both"}
}

// checkBanned fails unless w is a refusal until the ban's end.
func checkBanned(t *testing.T, what string, code int, h http.Header) {
	t.Helper()
	if code != http.StatusTooManyRequests {
		t.Fatalf("%s: %d, want 429", what, code)
	}
	for _, name := range []string{"Retry-After", "X-RateLimit-Reset"} {
		if v := h.Get(name); v != "3600" && v != "3599" {
			t.Fatalf("%s: %s %q, want the ban's end, 3600", what, name, v)
		}
	}
	if v := h.Get("X-RateLimit-Remaining"); v != "0" {
		t.Fatalf("%s: X-RateLimit-Remaining %q, want 0", what, v)
	}
	if v := h.Get("RateLimit"); !strings.Contains(v, "t=3600") && !strings.Contains(v, "t=3599") {
		t.Fatalf("%s: RateLimit %q, want t= the ban's end", what, v)
	}
}

// TestBanMemory: in memory, typed and as labels (all strings), and with
// countStatus (the ban starts when the counted responses reach the
// limit): the request the window refuses starts the ban, and every
// request of the key after it is refused until the ban's end.
func TestBanMemory(t *testing.T) {
	failed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	for name, tc := range map[string]struct {
		c    *Config
		next http.Handler
		code int
	}{
		"typed":       {banConfig(), okHandler, 200},
		"labels":      {&Config{Options: map[string]any{"window": "1s", "subWindow": "100ms", "limit": "1", "ban": "1h", "headers": "both"}}, okHandler, 200},
		"countStatus": {func() *Config { c := banConfig(); c.CountStatus = []string{"401"}; return c }(), failed, 401},
	} {
		t.Run(name, func(t *testing.T) {
			forget("ban@file")
			t.Cleanup(func() { forget("ban@file") })
			h, err := newChecked(context.Background(), tc.next, tc.c, "ban@file")
			if err != nil {
				t.Fatal(err)
			}
			if w := serve(h, "203.0.113.7:1", nil); w.Code != tc.code {
				t.Fatalf("first request: %d, want %d", w.Code, tc.code)
			}
			for i := 2; i <= 4; i++ {
				w := serve(h, "203.0.113.7:1", nil)
				checkBanned(t, "request "+string(rune('0'+i)), w.Code, w.Header())
			}
			if w := serve(h, "203.0.113.8:1", nil); w.Code != tc.code {
				t.Fatalf("another client: %d, want %d", w.Code, tc.code)
			}
			if n := middlewareOf(h).zone.Bans(); n != 1 {
				t.Fatalf("%d bans, want 1", n)
			}
		})
	}
}

// TestBanRejectsBadValues: ban must be a positive duration of at most a
// year, on a middleware with a window and a limit; a misspelled ban is
// pointed to it.
func TestBanRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		c    *Config
		want string
	}{
		{&Config{Window: "1m", Limit: 5, Ban: "0s"}, "ban: must be positive"},
		{&Config{Window: "1m", Limit: 5, Ban: "-1h"}, "ban: must be positive"},
		{&Config{Window: "1m", Limit: 5, Ban: "soon"}, "ban"},
		{&Config{Window: "1m", Ban: "1h"}, "ban: needs a window and a limit"},
		{&Config{Limit: 5, Ban: "1h"}, "ban: needs a window and a limit"},
		{&Config{Window: "1m", Limit: 5, Ban: "9000h"}, "ban: 9000h0m0s is too long"},
		{&Config{Window: "1m", Limit: 5, Options: map[string]any{"bann": "1h"}}, "unknown option bann; did you mean ban?"},
	} {
		forget("badban@file")
		_, err := build(http.NotFoundHandler(), tc.c, "badban@file")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.c, err, tc.want)
		}
	}
	forget("badban@file")
}

// TestBanRedis: the ban lives in Redis beside the key's count, with the
// ban's end as its TTL; another instance (a fresh zone and client on the
// same Redis) refuses the key until then.
func TestBanRedis(t *testing.T) {
	srv := redistest.Start(t)
	c := redisConfig(srv.Addr(), 1)
	c.Window, c.SubWindow, c.Ban, c.Headers = "1s", "100ms", "1h", "both"
	h := redisMiddleware(t, c, "ban@file")
	if w := serve(h, "203.0.113.7:1", nil); w.Code != 200 {
		t.Fatalf("first request: %d", w.Code)
	}
	w := serve(h, "203.0.113.7:1", nil)
	checkBanned(t, "second request", w.Code, w.Header())
	client, err := resp.New(resp.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	key := c.Redis.KeyPrefix + "ban@file:{203.0.113.7}:ban"
	if ttl, err := client.Do(context.Background(), "PTTL", key); err != nil || ttl.Int < 3590e3 || ttl.Int > 3600e3+1 {
		t.Fatalf("PTTL %s: %+v, %v; want about an hour", key, ttl, err)
	}
	forgetRedis("ban@file")
	h2 := redisMiddleware(t, c, "ban@file")
	w = serve(h2, "203.0.113.7:1", nil)
	checkBanned(t, "the other instance", w.Code, w.Header())
	if w := serve(h2, "203.0.113.8:1", nil); w.Code != 200 {
		t.Fatalf("another client: %d", w.Code)
	}
}

// TestBanPersist: a ban survives a restart with persist.
func TestBanPersist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snaps")
	const name = "banpersist@file"
	c := banConfig()
	c.Persist = &PersistConfig{Directory: dir}
	h := newMiddleware(t, c, name)
	serve(h, "203.0.113.7:1", nil)
	serve(h, "203.0.113.7:1", nil)
	registryMu.Lock()
	sv := registry[name].saver
	registryMu.Unlock()
	sv.Save()
	forget(name) // a restart: the next New makes a new zone
	h2 := newMiddleware(t, c, name)
	w := serve(h2, "203.0.113.7:1", nil)
	checkBanned(t, "after the restart", w.Code, w.Header())
}

// TestBanRejectionLine: the rejection line of a middleware with a ban
// says how many keys it banned, the plugin's equivalent of Caddy's
// bans_total.
func TestBanRejectionLine(t *testing.T) {
	log := captureRejections(t)
	h := newMiddleware(t, banConfig(), "banlog@file")
	serve(h, "203.0.113.7:1", nil)
	serve(h, "203.0.113.7:1", nil)
	if got := log.String(); !strings.HasSuffix(got, "; 1 keys banned since the start\n") {
		t.Fatalf("rejection line %q, want it to end with the bans", got)
	}
}
