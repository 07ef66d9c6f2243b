package yaegitest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestPluginRedis loads the plugin twice, as two Traefik instances would,
// with a redis block given as labels give it (every value a string), and
// checks that the two share one limit through a real redis-server.
func TestPluginRedis(t *testing.T) {
	srv := redistest.Start(t)
	config := map[string]any{
		"window": "1m",
		"limit":  "5",
		"redis": map[string]any{
			"endpoints":    srv.Addr(),
			"keyPrefix":    "yaegi" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":",
			"db":           "0",
			"dialTimeout":  "1s",
			"readTimeout":  "2s",
			"writeTimeout": "1",
			"poolSize":     "4",
		},
		"onStoreError": "deny",
	}
	a, _ := loadPlugin(t)
	b, _ := loadPlugin(t)
	ha := a.build(t, config, "shared@docker")
	hb := b.build(t, config, "shared@docker")
	var codes []int
	for i := 0; i < 3; i++ {
		codes = append(codes, get(ha, "203.0.113.7:1", "").Code)
	}
	for i := 0; i < 3; i++ {
		codes = append(codes, get(hb, "203.0.113.7:1", "").Code)
	}
	codes = append(codes, get(ha, "203.0.113.7:1", "").Code)
	want := []int{200, 200, 200, 200, 200, 429, 429}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes of instances a,a,a,b,b,b,a: %v, want %v", codes, want)
		}
	}
	w := get(hb, "203.0.113.7:1", "")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("X-RateLimit-Remaining") != "0" || w.Header().Get("Retry-After") == "" {
		t.Errorf("rejection through redis: %d %v", w.Code, w.Header())
	}
	// Redis gone: onStoreError deny rejects, with Retry-After 1.
	srv.Kill()
	if w := get(ha, "203.0.113.9:1", ""); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("redis down, deny: %d %v", w.Code, w.Header())
	}
}

// TestPluginRedisBadConfig checks that a bad redis value is reported
// through the interpreter naming its field.
func TestPluginRedisBadConfig(t *testing.T) {
	b, _ := loadPlugin(t)
	for field, redis := range map[string]map[string]any{
		"redis.endpoints[0]": {"endpoints": "no-port"},
		"redis.readTimeout":  {"readTimeout": "soon"},
		"redis.keyPrefix":    {"keyPrefix": "{x}"},
	} {
		cfg, err := b.createConfig(map[string]any{"window": "1m", "limit": "5", "redis": redis})
		if err != nil {
			t.Fatalf("%s: decode: %v", field, err)
		}
		if _, err := b.newChecked(backend, cfg, "bad@docker"); err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: error %v", field, err)
		}
	}
}
