package yaegitest

import (
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestPluginRedisTLS runs the interpreted plugin against a real
// redis-server that listens with TLS only and wants a client certificate,
// with redis.tls given as labels give it. onStoreError is deny, so a
// request passes only if TLS to Redis works under yaegi.
func TestPluginRedisTLS(t *testing.T) {
	srv, certs := redistest.StartTLS(t, "--tls-auth-clients", "yes")
	prefix := "yaegitls" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	config := func(tls map[string]any) map[string]any {
		return map[string]any{
			"window":       "1m",
			"limit":        "5",
			"redis":        map[string]any{"endpoints": srv.Addr(), "keyPrefix": prefix, "tls": tls},
			"onStoreError": "deny",
		}
	}
	b, _ := loadPlugin(t)
	h := b.build(t, config(map[string]any{"ca": certs.CA, "cert": certs.Cert, "key": certs.Key, "insecureSkipVerify": "false"}), "tls@docker")
	for i := 1; i <= 6; i++ {
		w := get(h, "203.0.113.7:1", "")
		want := 200
		if i == 6 {
			want = 429
		}
		if w.Code != want {
			t.Fatalf("request %d: %d (Retry-After %q), want %d", i, w.Code, w.Header().Get("Retry-After"), want)
		}
		if ra := w.Header().Get("Retry-After"); i == 6 && (ra == "1" || ra == "") {
			t.Errorf("request 6: Retry-After %q: refused by onStoreError, not by the limit", ra)
		}
	}
	if n := srv.Do(t, "EXISTS", prefix+"tls@docker:{203.0.113.7}")[0]; n != "1" {
		t.Errorf("the key is not in Redis (EXISTS %s)", n)
	}
	// Without the client certificate the server refuses: onStoreError.
	h = b.build(t, config(map[string]any{"ca": certs.CA}), "nocert@docker")
	if w := get(h, "203.0.113.7:1", ""); w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Errorf("no client certificate: %d Retry-After %q, want onStoreError deny", w.Code, w.Header().Get("Retry-After"))
	}
	if n := srv.Do(t, "EXISTS", prefix+"nocert@docker:{203.0.113.7}")[0]; n != "0" {
		t.Errorf("the key of the refused client is in Redis (EXISTS %s)", n)
	}
}
