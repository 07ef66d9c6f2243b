package yaegitest

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// banSettings is limit 1 per second and a ban of an hour, as labels give
// them: the second request is banned, its Retry-After the ban's hour
// where the window alone says a second.
func banSettings() map[string]any {
	return map[string]any{"window": "1s", "subWindow": "100ms", "limit": "1", "ban": "1h"}
}

// expectBanned fails unless w is refused until the ban's end.
func expectBanned(t *testing.T, what string, code int, h http.Header) {
	t.Helper()
	if code != http.StatusTooManyRequests {
		t.Fatalf("%s: %d, want 429", what, code)
	}
	for _, name := range []string{"Retry-After", "X-RateLimit-Reset"} {
		if v := h.Get(name); v != "3600" && v != "3599" {
			t.Fatalf("%s: %s %q, want the ban's 3600", what, name, v)
		}
	}
}

// TestPluginBan: under yaegi, a key refused by its window is banned, in
// memory and, with two plugins loaded as two Traefik instances, through
// one Redis: the other instance honours the ban.
func TestPluginBan(t *testing.T) {
	b, _ := loadPlugin(t)
	h := b.build(t, banSettings(), "ban@file")
	if w := get(h, "203.0.113.7:1", ""); w.Code != http.StatusOK {
		t.Fatalf("first request: %d", w.Code)
	}
	for i := 2; i <= 3; i++ {
		w := get(h, "203.0.113.7:1", "")
		expectBanned(t, "memory, request "+strconv.Itoa(i), w.Code, w.Header())
	}
	if w := get(h, "203.0.113.8:1", ""); w.Code != http.StatusOK {
		t.Fatalf("another client: %d", w.Code)
	}

	srv := redistest.Start(t)
	settings := banSettings()
	settings["redis"] = map[string]any{"endpoints": srv.Addr(), "keyPrefix": "yban" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
	a, _ := loadPlugin(t)
	c, _ := loadPlugin(t)
	ha := a.build(t, settings, "ban@docker")
	hc := c.build(t, settings, "ban@docker")
	if w := get(ha, "203.0.113.7:1", ""); w.Code != http.StatusOK {
		t.Fatalf("redis, first request: %d", w.Code)
	}
	w := get(ha, "203.0.113.7:1", "")
	expectBanned(t, "redis, instance a", w.Code, w.Header())
	// Once the window alone admits the key again (a twin middleware
	// without the ban shows when), instance c still refuses it.
	twin := map[string]any{"window": "1s", "subWindow": "100ms", "limit": "1", "redis": settings["redis"]}
	ht := a.build(t, twin, "twin@docker")
	get(ht, "203.0.113.7:1", "")
	for deadline := time.Now().Add(3 * time.Second); get(ht, "203.0.113.7:1", "").Code != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the twin without a ban never admitted the key again")
		}
	}
	w = get(hc, "203.0.113.7:1", "")
	expectBanned(t, "redis, instance c honours a's ban once the window admits", w.Code, w.Header())
}
