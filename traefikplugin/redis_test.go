package traefikplugin

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/spelltest"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// redisMiddleware returns a middleware on Redis at addr, forgotten (zone
// and redis client) when the test ends.
func redisMiddleware(t *testing.T, c *Config, name string) http.Handler {
	t.Helper()
	t.Cleanup(func() { forgetRedis(name) })
	return newMiddleware(t, c, name)
}

// forgetRedis detaches a middleware from its redis client.
func forgetRedis(name string) {
	redisMu.Lock()
	defer redisMu.Unlock()
	releaseRedis(name)
}

func redisConfig(addr string, limit int64) *Config {
	c := validConfig()
	c.Limit = limit
	c.Redis = &RedisConfig{Endpoints: []string{addr}, KeyPrefix: "test" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
	return c
}

func TestRedisRejectsBadValues(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		field  string
		modify func(r *RedisConfig, c *Config)
	}{
		{"onStoreError", func(r *RedisConfig, c *Config) { c.OnStoreError = "retry" }},
		{"redis.endpoints[0]", func(r *RedisConfig, c *Config) { r.Endpoints = []string{"redis"} }},
		{"redis.endpoints[1]", func(r *RedisConfig, c *Config) { r.Endpoints = []string{"a:1", ""} }},
		{"redis.endpoints[0]", func(r *RedisConfig, c *Config) { r.Endpoints = []string{"redis:"} }},
		{"redis.db", func(r *RedisConfig, c *Config) { r.DB = -1 }},
		{"redis.db", func(r *RedisConfig, c *Config) { r.Endpoints = []string{"a:1", "b:1"}; r.DB = 2 }},
		{"redis.dialTimeout", func(r *RedisConfig, c *Config) { r.DialTimeout = "soon" }},
		{"redis.dialTimeout", func(r *RedisConfig, c *Config) { r.DialTimeout = "0" }},
		{"redis.readTimeout", func(r *RedisConfig, c *Config) { r.ReadTimeout = "-1s" }},
		{"redis.writeTimeout", func(r *RedisConfig, c *Config) { r.WriteTimeout = "1x" }},
		{"redis.dialTimeout", func(r *RedisConfig, c *Config) { r.DialTimeout = "1ns" }},
		{"redis.readTimeout", func(r *RedisConfig, c *Config) { r.ReadTimeout = "1ns" }},
		{"redis.writeTimeout", func(r *RedisConfig, c *Config) { r.WriteTimeout = "999us" }},
		{"redis.poolSize", func(r *RedisConfig, c *Config) { r.PoolSize = -1 }},
		{"redis.maxActiveConns", func(r *RedisConfig, c *Config) { r.MaxActiveConns = -1 }},
		{"redis.minIdleConns", func(r *RedisConfig, c *Config) { r.MinIdleConns = -1 }},
		{"redis.minIdleConns", func(r *RedisConfig, c *Config) { r.PoolSize, r.MinIdleConns = 8, 9 }},
		{"redis.minIdleConns", func(r *RedisConfig, c *Config) { r.MaxActiveConns, r.MinIdleConns = 4, 5 }},
		{"redis.keyPrefix", func(r *RedisConfig, c *Config) { r.KeyPrefix = "a{b}:" }},
		{"redis.tls", func(r *RedisConfig, c *Config) { r.TLS = &RedisTLS{Cert: "c.pem"} }},
		{"redis.tls", func(r *RedisConfig, c *Config) { r.TLS = &RedisTLS{CA: filepath.Join(dir, "missing.pem")} }},
		{"redis.tls", func(r *RedisConfig, c *Config) { r.TLS = &RedisTLS{CA: notPEM} }},
		{"redis.tls", func(r *RedisConfig, c *Config) {
			r.TLS = &RedisTLS{Cert: notPEM, Key: notPEM}
		}},
		{"window", func(r *RedisConfig, c *Config) { c.Window = "1500ns"; c.SubWindow = "1500ns"; c.Algorithm = "fixed" }},
	}
	for _, tt := range tests {
		c := validConfig()
		c.Redis = &RedisConfig{Endpoints: []string{"127.0.0.1:6379"}}
		tt.modify(c.Redis, c)
		h, err := newChecked(context.Background(), http.NotFoundHandler(), c, "bad@file")
		if err == nil {
			forgetRedis("bad@file")
			t.Errorf("%s: config %+v accepted", tt.field, c.Redis)
			continue
		}
		if h != nil {
			t.Errorf("%s: handler returned with error %v", tt.field, err)
		}
		if msg := err.Error(); !strings.Contains(msg, tt.field+":") || !strings.Contains(msg, `"bad@file"`) {
			t.Errorf("%s: error %q does not name the field and the middleware", tt.field, msg)
		}
		if s := spelltest.Find(err.Error(), spelltest.Caddy); s != "" {
			t.Errorf("%s: error %q spells a field as Caddy does: %s", tt.field, err, s)
		}
	}
	// onStoreError without redis would be silently ignored: refused.
	c := validConfig()
	c.OnStoreError = "deny"
	if _, err := newChecked(context.Background(), http.NotFoundHandler(), c, "bad@file"); err == nil || !strings.Contains(err.Error(), "onStoreError:") {
		t.Errorf("onStoreError without redis: %v", err)
	}
	if n := redisClients(); n != 0 {
		t.Errorf("rejected configs left %d redis clients open", n)
	}
}

// TestRedisTimeoutsTooShort: a timeout under a millisecond is refused at
// load, naming the field and the value: the client's watchdog would spin.
func TestRedisTimeoutsTooShort(t *testing.T) {
	for _, tt := range []struct {
		set  func(r *RedisConfig, d string)
		in   string
		want string
	}{
		{func(r *RedisConfig, d string) { r.DialTimeout = d }, "1ns", "redis.dialTimeout: 1ns is too short (at least 1ms)"},
		{func(r *RedisConfig, d string) { r.ReadTimeout = d }, "1ns", "redis.readTimeout: 1ns is too short (at least 1ms)"},
		{func(r *RedisConfig, d string) { r.ReadTimeout = d }, "0.5ms", "redis.readTimeout: 500µs is too short (at least 1ms)"},
		{func(r *RedisConfig, d string) { r.WriteTimeout = d }, "999999ns", "redis.writeTimeout: 999.999µs is too short (at least 1ms)"},
	} {
		c := validConfig()
		c.Redis = &RedisConfig{}
		tt.set(c.Redis, tt.in)
		if _, err := c.redisSettings(); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.in, err, tt.want)
		}
	}
	c := validConfig()
	c.Redis = &RedisConfig{DialTimeout: "1ms", ReadTimeout: "1ms", WriteTimeout: "1ms"}
	rs, err := c.redisSettings()
	if err != nil {
		t.Fatalf("timeouts of 1ms: %v", err)
	}
	if o := rs.client; o.DialTimeout != time.Millisecond || o.ReadTimeout != time.Millisecond || o.WriteTimeout != time.Millisecond {
		t.Errorf("timeouts of 1ms: %+v", o)
	}
}

func TestRedisSettingsDefaults(t *testing.T) {
	c := validConfig()
	c.Redis = &RedisConfig{Endpoints: []string{" 10.0.0.1:6379", "10.0.0.2:6379 "}}
	rs, err := c.redisSettings()
	if err != nil {
		t.Fatal(err)
	}
	if rs.keyPrefix != "wl:" || rs.policy.String() != "allow" || !rs.client.AutoPipeline ||
		strings.Join(rs.client.Addrs, ",") != "10.0.0.1:6379,10.0.0.2:6379" {
		t.Errorf("defaults: %+v", rs)
	}
	c.Redis = &RedisConfig{DialTimeout: "2", ReadTimeout: "250ms", WriteTimeout: "1s", PoolSize: 8, DB: 3, Username: "u", Password: "p"}
	c.OnStoreError = "LOCAL"
	if rs, err = c.redisSettings(); err != nil {
		t.Fatal(err)
	}
	o := rs.client
	if o.Addrs[0] != "localhost:6379" || o.DialTimeout != 2*time.Second || o.ReadTimeout != 250*time.Millisecond ||
		o.WriteTimeout != time.Second || o.PoolSize != 8 || o.DB != 3 || o.Username != "u" || o.Password != "p" ||
		rs.policy.String() != "local" {
		t.Errorf("settings: %+v", rs)
	}
	// Traefik's rateLimit.redis pool fields: maxActiveConns caps the pool,
	// minIdleConns is accepted within it.
	for _, tc := range []struct{ pool, maxActive, minIdle, want int }{
		{0, 0, 10, 0}, // the client's default, 64
		{0, 16, 16, 16},
		{8, 16, 0, 8},
		{32, 16, 2, 16},
	} {
		c.Redis = &RedisConfig{PoolSize: tc.pool, MaxActiveConns: tc.maxActive, MinIdleConns: tc.minIdle}
		if rs, err = c.redisSettings(); err != nil || rs.client.PoolSize != tc.want {
			t.Errorf("poolSize %d maxActiveConns %d minIdleConns %d: %+v, %v; want pool size %d", tc.pool, tc.maxActive, tc.minIdle, rs, err, tc.want)
		}
	}
	c.Redis.TLS = &RedisTLS{InsecureSkipVerify: true}
	if rs, err = c.redisSettings(); err != nil || rs.client.TLS == nil || !rs.client.TLS.InsecureSkipVerify {
		t.Errorf("tls: %+v, %v", rs, err)
	}
}

// New never dials: Traefik's startup must not wait on Redis.
func TestRedisNewDoesNotDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	redisMiddleware(t, redisConfig(ln.Addr().String(), 5), "nodial@file")
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("New connected to Redis")
	}
}

// The limit is kept in Redis under <keyPrefix><middleware name>:{<key>},
// shared by a second middleware instance that has its own memory.
func TestRedisLimit(t *testing.T) {
	srv := redistest.Start(t)
	c := redisConfig(srv.Addr(), 5)
	h := redisMiddleware(t, c, "api@file")
	for i := 1; i <= 7; i++ {
		w := serve(h, "203.0.113.7:1", nil)
		want := 200
		if i > 5 {
			want = 429
		}
		if w.Code != want {
			t.Fatalf("request %d: %d, want %d", i, w.Code, want)
		}
		if remaining := w.Header().Get("X-RateLimit-Remaining"); i <= 5 && remaining != strconv.Itoa(5-i) {
			t.Errorf("request %d: remaining %q", i, remaining)
		}
		if i > 5 && w.Header().Get("Retry-After") == "" {
			t.Errorf("request %d: no Retry-After", i)
		}
	}
	client, err := resp.New(resp.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	key := c.Redis.KeyPrefix + "api@file:{203.0.113.7}"
	ttl, err := client.Do(context.Background(), "PTTL", key)
	if err != nil || ttl.Int <= 0 || ttl.Int > int64(66*time.Second/time.Millisecond) {
		t.Errorf("PTTL %s: %+v, %v: want the key to expire within window + sub-window", key, ttl, err)
	}
	// Another Traefik instance: a fresh zone (no local count) and a fresh
	// client on the same Redis, made by dropping this process's ones.
	oldZone := middlewareOf(h).zone
	forgetRedis("api@file")
	h2 := redisMiddleware(t, c, "api@file")
	if middlewareOf(h2).zone == oldZone || middlewareOf(h2).zone.Len() != 0 {
		t.Fatal("the second instance shares the first one's memory")
	}
	if w := serve(h2, "203.0.113.7:1", nil); w.Code != 429 {
		t.Errorf("an instance with empty memory admitted a key Redis counts as over: %d", w.Code)
	}
	if w := serve(h2, "203.0.113.8:1", nil); w.Code != 200 {
		t.Errorf("another key: %d", w.Code)
	}
}

// onStoreError decides while Redis is down; no request fails with a 5xx.
func TestRedisDownPolicies(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Kill()
	var log strings.Builder
	storeLog = &log
	defer func() { storeLog = errorLog }()
	tests := []struct {
		policy string
		want   []int
	}{
		{"", []int{200, 200, 200, 200}},
		{"allow", []int{200, 200, 200, 200}},
		{"deny", []int{429, 429, 429, 429}},
		{"local", []int{200, 200, 429, 429}},
	}
	for _, tt := range tests {
		c := redisConfig(addr, 2)
		c.OnStoreError = tt.policy
		name := "down-" + tt.policy + "@file"
		h := redisMiddleware(t, c, name)
		for i, want := range tt.want {
			w := serve(h, "203.0.113.7:1", nil)
			if w.Code != want {
				t.Errorf("%q: request %d: %d, want %d", tt.policy, i+1, w.Code, want)
			}
			if w.Code == 429 && w.Header().Get("Retry-After") == "" {
				t.Errorf("%q: request %d: 429 without Retry-After", tt.policy, i+1)
			}
		}
	}
	// One line per client: the breaker opened, later requests did not try.
	if lines := strings.Count(log.String(), "\n"); lines != len(tests) || !strings.Contains(log.String(), "connection refused; requests decided by onStoreError local") {
		t.Errorf("store log, want one line per middleware:\n%s", log.String())
	}
}

// Reloads reuse the client of an unchanged redis block; 100 reloads that
// change it leave one client and no extra goroutines (connections, probes).
func TestRedisReloadsDoNotLeak(t *testing.T) {
	srv := redistest.Start(t)
	const name = "leak-redis@file"
	defer forget(name)
	defer forgetRedis(name)
	c := redisConfig(srv.Addr(), 1000)
	h1, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	same := redisConfig(srv.Addr(), 1000) // freshly decoded, equal
	same.Redis.KeyPrefix = c.Redis.KeyPrefix
	h2, err := newChecked(context.Background(), okHandler, same, name)
	if err != nil {
		t.Fatal(err)
	}
	if middlewareOf(h1).store != middlewareOf(h2).store {
		t.Error("a reload with the same redis block made a new client")
	}
	serve(h2, "203.0.113.7:1", nil)
	clients := redisClients()
	before := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		c := redisConfig(srv.Addr(), 1000)
		c.Redis.PoolSize = 1 + i%2 // a new client every time
		if i%3 == 0 {
			c.OnStoreError = "local"
		}
		h, err := newChecked(context.Background(), okHandler, c, name)
		if err != nil {
			t.Fatal(err)
		}
		if w := serve(h, "203.0.113.7:1", nil); w.Code != 200 {
			t.Fatalf("reload %d: %d", i, w.Code)
		}
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(5 * time.Millisecond)
	}
	if n > before {
		t.Errorf("goroutines: %d before 100 reloads, %d after", before, n)
	}
	if got := redisClients(); got != clients {
		t.Errorf("%d redis clients after the reloads, want %d", got, clients)
	}
	// Dropping the redis block closes the last client of the middleware.
	if _, err := newChecked(context.Background(), okHandler, validConfig(), name); err != nil {
		t.Fatal(err)
	}
	if got := redisClients(); got != clients-1 {
		t.Errorf("%d redis clients after the redis block went, want %d", got, clients-1)
	}
}
