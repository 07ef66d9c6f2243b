package caddymodule

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/windowlimit/windowlimit/shared/guard"
)

const zoneA = "\tzone a {\n\t\twindow 1m\n\t\tlimit 5\n\t}\n"

func TestUnmarshalCaddyfileRedis(t *testing.T) {
	tests := []struct {
		name, store, want string
	}{
		{"bare", "store redis", `{}`},
		{"address", "store redis {\n\t\taddress 10.0.0.1:6379\n\t}", `{"address":"10.0.0.1:6379"}`},
		{"url", "store redis {\n\t\turl rediss://u:{env.P}@r:6380/2\n\t}", `{"url":"rediss://u:{env.P}@r:6380/2"}`},
		{"cluster", "store redis {\n\t\taddresses a:1 b:1 c:1\n\t}", `{"addresses":["a:1","b:1","c:1"]}`},
		{"sentinel", "store redis {\n\t\tsentinel mymaster s1:26379 s2:26379\n\t}", `{"sentinel_master":"mymaster","sentinel_addresses":["s1:26379","s2:26379"]}`},
		{"sentinel auth", "store redis {\n\t\tsentinel mymaster s1:26379\n\t\tsentinel_username watcher\n\t\tsentinel_password {env.SENTINEL_PASSWORD}\n\t}",
			`{"sentinel_master":"mymaster","sentinel_addresses":["s1:26379"],"sentinel_username":"watcher","sentinel_password":"{env.SENTINEL_PASSWORD}"}`},
		{"everything else", `store redis {
		address      r:6379
		username     limiter
		password     {env.REDIS_PASSWORD}
		db           3
		tls {
			ca                   /etc/ca.pem
			cert                 /etc/c.pem
			key                  /etc/k.pem
			server_name          redis.internal
			insecure_skip_verify
		}
		dial_timeout 2s
		timeout      250ms
		pool_size    16
		key_prefix   rl:
	}
	on_store_error local`, `{"address":"r:6379","username":"limiter","password":"{env.REDIS_PASSWORD}","db":3,` +
			`"tls":{"ca":"/etc/ca.pem","cert":"/etc/c.pem","key":"/etc/k.pem","server_name":"redis.internal","insecure_skip_verify":true},` +
			`"dial_timeout":2000000000,"timeout":250000000,"pool_size":16,"key_prefix":"rl:"}`},
		{"bare tls", "store redis {\n\t\ttls\n\t}", `{"tls":{}}`},
		{"lease off", "store redis {\n\t\tlease off\n\t}", `{"lease":"off"}`},
		{"lease auto", "store redis {\n\t\taddress r:6379\n\t\tlease auto\n\t}", `{"address":"r:6379","lease":"auto"}`},
		// The address on the store's line, as users write it.
		{"address on the line", "store redis 127.0.0.1:6379", `{"address":"127.0.0.1:6379"}`},
		{"address on the line and a block", "store redis r:6379 {\n\t\tpassword {env.P}\n\t}", `{"address":"r:6379","password":"{env.P}"}`},
		{"url on the line", "store redis redis://r:6380/2", `{"url":"redis://r:6380/2"}`},
		{"tls url on the line", "store redis rediss://u:{env.P}@r:6380", `{"url":"rediss://u:{env.P}@r:6380"}`},
		{"placeholder address", "store redis {env.REDIS_ADDR}", `{"address":"{env.REDIS_ADDR}"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit {\n" + zoneA + "\t" + tt.store + "\n}")); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(h.Redis)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.Contains(tt.store, "on_store_error") && h.OnStoreError != "local" {
				t.Errorf("on_store_error %q", h.OnStoreError)
			}
		})
	}
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit {\n" + zoneA + "\tstore memory\n}")); err != nil || h.Redis != nil {
		t.Errorf("store memory: %v, %+v", err, h.Redis)
	}
}

func TestUnmarshalCaddyfileRedisErrors(t *testing.T) {
	tests := []struct {
		name, store, want string
	}{
		{"unknown store", "store etcd", `unknown store "etcd" (want memory or redis)`},
		{"memory block", "store memory {\n\t\taddress a:1\n\t}", "store memory: takes no block"},
		{"redis two addresses", "store redis a:1 b:1", "store redis: one address or URL on this line, got 2; a Redis Cluster's nodes go in the block: store redis { addresses <host:port>... }"},
		{"memory argument", "store memory a:1", "wrong argument count"},
		{"address on the line and in the block", "store redis a:1 {\n\t\taddress b:1\n\t}", "set one of address, url, addresses (cluster) and sentinel (address a:1 on the store redis line is set above)"},
		{"url in the block too", "store redis a:1 {\n\t\turl redis://b:1\n\t}", "set one of address, url, addresses (cluster) and sentinel"},
		{"url on the line, address in the block", "store redis redis://u:secret@b:1 {\n\t\taddress a:1\n\t}", "(url on the store redis line is set above)"},
		{"address without a port on the line", "store redis 127.0.0.1", `store redis: address: "127.0.0.1" has no port: write 127.0.0.1:6379`},
		{"address without a port", "store redis {\n\t\taddress redis\n\t}", `store redis: address: "redis" has no port: write redis:6379`},
		{"IPv6 address without a port", "store redis ::1", `store redis: address: "::1" has no port: write [::1]:6379`},
		{"address empty port", "store redis {\n\t\taddress redis:\n\t}", `store redis: address: "redis:" is not host:port`},
		{"cluster node without a port", "store redis {\n\t\taddresses a:1 b\n\t}", `store redis: addresses[1]: "b" has no port: write b:6379`},
		{"sentinel without a port", "store redis {\n\t\tsentinel m s1\n\t}", `store redis: sentinel address 1: "s1" has no port: write s1:26379`},
		{"url bad scheme", "store redis {\n\t\turl http://r:6379\n\t}", `store redis: url: redis: invalid URL scheme: http`},
		{"url db", "store redis redis://r:6379/-1", "store redis: url: db: must not be negative, got -1"},
		{"unknown", "store redis {\n\t\thost a\n\t}", `store redis: unknown subdirective "host"`},
		{"duplicate", "store redis {\n\t\tdb 1\n\t\tdb 2\n\t}", "store redis: duplicate db"},
		{"address missing", "store redis {\n\t\taddress\n\t}", "wrong argument count"},
		{"address two", "store redis {\n\t\taddress a:1 b:1\n\t}", "wrong argument count"},
		{"url missing", "store redis {\n\t\turl\n\t}", "wrong argument count"},
		{"addresses missing", "store redis {\n\t\taddresses\n\t}", "wrong argument count"},
		{"sentinel short", "store redis {\n\t\tsentinel mymaster\n\t}", "sentinel: want a master name and at least one sentinel address"},
		{"two targets", "store redis {\n\t\taddress a:1\n\t\turl redis://b:1\n\t}", "set one of address, url, addresses (cluster) and sentinel"},
		{"cluster db", "store redis {\n\t\taddresses a:1 b:1\n\t\tdb 1\n\t}", "db: a Redis Cluster has only db 0"},
		{"username missing", "store redis {\n\t\tusername\n\t}", "wrong argument count"},
		{"password two", "store redis {\n\t\tpassword a b\n\t}", "wrong argument count"},
		{"db word", "store redis {\n\t\tdb one\n\t}", `db: want a database number of at least 0, got "one"`},
		{"db negative", "store redis {\n\t\tdb -1\n\t}", "db: want a database number"},
		{"dial_timeout bad", "store redis {\n\t\tdial_timeout soon\n\t}", "dial_timeout: want a positive duration"},
		{"timeout zero", "store redis {\n\t\ttimeout 0s\n\t}", "timeout: want a positive duration"},
		{"dial_timeout 1ns", "store redis {\n\t\tdial_timeout 1ns\n\t}", "store redis: dial_timeout: 1ns is too short (at least 1ms)"},
		{"dial_timeout under 1ms", "store redis {\n\t\tdial_timeout 999us\n\t}", "store redis: dial_timeout: 999µs is too short (at least 1ms)"},
		{"timeout 1ns", "store redis {\n\t\ttimeout 1ns\n\t}", "store redis: timeout: 1ns is too short (at least 1ms)"},
		{"timeout under 1ms", "store redis {\n\t\ttimeout 0.5ms\n\t}", "store redis: timeout: 500µs is too short (at least 1ms)"},
		{"pool_size zero", "store redis {\n\t\tpool_size 0\n\t}", "pool_size: want a positive integer"},
		{"pool_size huge", "store redis {\n\t\tpool_size 99999999\n\t}", "pool_size: 99999999 is too large"},
		{"key_prefix braces", "store redis {\n\t\tkey_prefix {x}\n\t}", `key_prefix: "{x}" must not contain braces`},
		{"tls argument", "store redis {\n\t\ttls on\n\t}", "wrong argument count"},
		{"tls unknown", "store redis {\n\t\ttls {\n\t\t\tverify no\n\t\t}\n\t}", `tls: unknown subdirective "verify"`},
		{"tls duplicate", "store redis {\n\t\ttls {\n\t\t\tca a\n\t\t\tca b\n\t\t}\n\t}", "tls: duplicate ca"},
		{"tls cert alone", "store redis {\n\t\ttls {\n\t\t\tcert c.pem\n\t\t}\n\t}", "tls: cert and key must be given together"},
		{"lease unknown", "store redis {\n\t\tlease on\n\t}", `store redis: lease: want auto or off, got "on"`},
		{"lease empty", "store redis {\n\t\tlease \"\"\n\t}", `store redis: lease: want auto or off, got ""`},
		{"lease missing", "store redis {\n\t\tlease\n\t}", "wrong argument count"},
		{"lease two", "store redis {\n\t\tlease auto off\n\t}", "wrong argument count"},
		{"lease duplicate", "store redis {\n\t\tlease off\n\t\tlease auto\n\t}", "store redis: duplicate lease"},
		{"tls insecure argument", "store redis {\n\t\ttls {\n\t\t\tinsecure_skip_verify yes\n\t\t}\n\t}", "wrong argument count"},
		{"on_store_error unknown", "store redis\n\ton_store_error retry", `on_store_error: unknown store failure policy "retry"`},
		{"on_store_error missing", "store redis\n\ton_store_error", "wrong argument count"},
		{"on_store_error without redis", "on_store_error deny", "on_store_error applies only to the Redis store"},
		{"on_store_error with memory", "store memory\n\ton_store_error deny", "on_store_error applies only to the Redis store"},
		{"duplicate store", "store redis\n\tstore memory", "duplicate subdirective store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit {\n" + zoneA + "\t" + tt.store + "\n}"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "Testfile:") {
				t.Errorf("error %q has no line", err)
			}
		})
	}
}

// The migration message names the syntax to use instead.
func TestDistributedNamesRedisSyntax(t *testing.T) {
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit {\n" + zoneA + "\tdistributed\n}"))
	if err == nil || !strings.Contains(err.Error(), "store redis { address <host:port> }") {
		t.Errorf("error %v", err)
	}
}

func TestRedisResolve(t *testing.T) {
	t.Setenv("WL_TEST_REDIS_PASSWORD", "s3cret")
	t.Setenv("WL_TEST_REDIS_HOST", "redis.internal")
	s, err := (&RedisConfig{}).resolve(guard.FailAllow)
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.Addrs[0] != "localhost:6379" || s.prefix != "wl:" || s.opts.DialTimeout != time.Second ||
		s.opts.ReadTimeout != 500*time.Millisecond || s.opts.WriteTimeout != 500*time.Millisecond || s.cluster {
		t.Errorf("defaults: %+v", s)
	}
	c := &RedisConfig{Address: "{env.WL_TEST_REDIS_HOST}:6379", Username: "lim", Password: "{env.WL_TEST_REDIS_PASSWORD}",
		DB: 2, PoolSize: 7, KeyPrefix: "x:"}
	if s, err = c.resolve(guard.FailDeny); err != nil {
		t.Fatal(err)
	}
	if s.opts.Addrs[0] != "redis.internal:6379" || s.opts.Password != "s3cret" || s.opts.Username != "lim" ||
		s.opts.DB != 2 || s.opts.PoolSize != 7 || s.prefix != "x:" || s.policy != guard.FailDeny {
		t.Errorf("resolved: %+v", s)
	}
	if s, err = (&RedisConfig{URL: "rediss://u:{env.WL_TEST_REDIS_PASSWORD}@r:6380/4"}).resolve(0); err != nil {
		t.Fatal(err)
	}
	if s.opts.Addrs[0] != "r:6380" || s.opts.Username != "u" || s.opts.Password != "s3cret" || s.opts.DB != 4 || s.tls == nil {
		t.Errorf("url: %+v", s)
	}
	// Fields beside the URL win.
	if s, err = (&RedisConfig{URL: "redis://u:p@r:6380/4", Username: "v", Password: "q", DB: 5}).resolve(0); err != nil ||
		s.opts.Username != "v" || s.opts.Password != "q" || s.opts.DB != 5 || s.tls != nil {
		t.Errorf("url with fields beside: %+v, %v", s, err)
	}
	if s, err = (&RedisConfig{Addresses: []string{"a:1", "b:1"}}).resolve(0); err != nil || !s.cluster {
		t.Errorf("cluster: %+v, %v", s, err)
	}
	if s, err = (&RedisConfig{SentinelMaster: "m", SentinelAddresses: []string{"s:26379"}}).resolve(0); err != nil || s.opts.MasterName != "m" {
		t.Errorf("sentinel: %+v, %v", s, err)
	}
	t.Setenv("WL_TEST_SENTINEL_PASSWORD", "s3cret")
	if s, err = (&RedisConfig{SentinelMaster: "m", SentinelAddresses: []string{"s:26379"}, SentinelUsername: "w",
		SentinelPassword: "{env.WL_TEST_SENTINEL_PASSWORD}"}).resolve(0); err != nil ||
		s.opts.SentinelUsername != "w" || s.opts.SentinelPassword != "s3cret" || s.opts.Password != "" {
		t.Errorf("sentinel auth: %+v, %v", s, err)
	}

	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("no"), 0o600)
	bad := []struct {
		c    RedisConfig
		want string
	}{
		{RedisConfig{Password: "{env.WL_TEST_UNSET_VARIABLE}"}, "password:"},
		{RedisConfig{Password: "{no.such.placeholder}"}, "password:"},
		{RedisConfig{SentinelMaster: "m"}, "sentinel:"},
		{RedisConfig{Address: "a:1", SentinelPassword: "x"}, "sentinel_password apply only with sentinel"},
		{RedisConfig{SentinelMaster: "m", SentinelAddresses: []string{"s:1"}, SentinelPassword: "{env.WL_TEST_UNSET_VARIABLE}"}, "sentinel_password:"},
		{RedisConfig{Address: "{env.WL_TEST_UNSET_VARIABLE}"}, "address:"},
		{RedisConfig{Address: "no-port"}, `address: "no-port" is not host:port`},
		{RedisConfig{Addresses: []string{"a:1", "b"}}, "addresses[1]:"},
		{RedisConfig{URL: "http://u:hunter2@r:1"}, "url:"},
		{RedisConfig{Address: "a:1", Addresses: []string{"b:1"}}, "set one of"},
		{RedisConfig{DB: -1}, "db:"},
		{RedisConfig{PoolSize: -1}, "pool_size:"},
		{RedisConfig{KeyPrefix: "{"}, "key_prefix"},
		{RedisConfig{DialTimeout: 1}, "dial_timeout: 1ns is too short (at least 1ms)"},
		{RedisConfig{Timeout: caddy.Duration(time.Millisecond - 1)}, "timeout: 999.999µs is too short (at least 1ms)"},
	}
	for _, tt := range bad {
		_, err := tt.c.resolve(0)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.c, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	}
	ms := caddy.Duration(time.Millisecond)
	if s, err = (&RedisConfig{DialTimeout: ms, Timeout: ms}).resolve(0); err != nil || s.opts.DialTimeout != time.Millisecond || s.opts.ReadTimeout != time.Millisecond {
		t.Errorf("timeouts of 1ms: %+v, %v", s, err)
	}
	s, _ = (&RedisConfig{TLS: &RedisTLS{CA: notPEM}}).resolve(0)
	if _, err := s.clients(); err == nil || !strings.Contains(err.Error(), "tls:") {
		t.Errorf("bad CA: %v", err)
	}
}

// JSON configs skip the Caddyfile's checks: Provision makes them, and
// leaves no client behind when it fails.
func TestProvisionRedisErrors(t *testing.T) {
	before := redisCount()
	tests := []struct{ config, want string }{
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"on_store_error":"deny"}`, "on_store_error applies only to the Redis store"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{},"on_store_error":"maybe"}`, "on_store_error: unknown store failure policy"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{"address":"a:1","url":"redis://b:1"}}`, "store redis: set one of"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{"password":"{env.WL_TEST_UNSET_VARIABLE}"}}`, "store redis: password:"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{"dial_timeout":"1ns"}}`, "store redis: dial_timeout: 1ns is too short (at least 1ms)"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{"timeout":"999us"}}`, "store redis: timeout: 999µs is too short (at least 1ms)"},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{"lease":"on"}}`, `store redis: lease: want auto or off, got "on"`},
		{`{"rate_limits":{"a":{"window":"1m","limit":1}},"redis":{"lease":"OFF"}}`, `store redis: lease: want auto or off, got "OFF"`},
		{`{"rate_limits":{"a{b}":{"window":"1m","limit":1}},"redis":{}}`, `zone name: "a{b}" must not have braces`},
		{`{"rate_limits":{"a":{"window":"1500ns","limit":1,"algorithm":"fixed"}},"redis":{}}`, "window: 1.5µs must be whole microseconds"},
		{`{"rate_limits":{"a":{"window":"10us","sub_window":"2500ns","limit":1}},"redis":{}}`, "sub_window: 2.5µs must be whole microseconds"},
	}
	for _, tt := range tests {
		expectProvisionError(t, tt.config, tt.want)
	}
	if n := redisCount(); n != before {
		t.Errorf("%d redis clients after failed provisions, %d before", n, before)
	}
}
