package traefikplugin

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A reload calls New again with the same name and config: the count goes on.
func TestReloadKeepsCount(t *testing.T) {
	c := validConfig()
	c.Limit = 3
	h := newMiddleware(t, c, "reload@file")
	for i := 0; i < 2; i++ {
		if serve(h, "203.0.113.7:1", nil).Code != 200 {
			t.Fatal("request before the reload rejected")
		}
	}
	reloaded := validConfig() // a freshly decoded, equal config
	reloaded.Limit = 3
	h2, err := newChecked(context.Background(), okHandler, reloaded, "reload@file")
	if err != nil {
		t.Fatal(err)
	}
	if serve(h2, "203.0.113.7:1", nil).Code != 200 {
		t.Fatal("third request rejected after the reload")
	}
	if serve(h2, "203.0.113.7:1", nil).Code != 429 {
		t.Error("fourth request allowed: the reload reset the count")
	}
	// The old handler, still serving in-flight requests, shares the count.
	if serve(h, "203.0.113.7:1", nil).Code != 429 {
		t.Error("the old handler does not share the count")
	}
}

// Two routers using one middleware share its limit.
func TestRoutersShareMiddlewareCount(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	a := newMiddleware(t, c, "shared@file")
	b, err := newChecked(context.Background(), okHandler, c, "shared@file")
	if err != nil {
		t.Fatal(err)
	}
	if serve(a, "203.0.113.7:1", nil).Code != 200 || serve(b, "203.0.113.7:1", nil).Code != 429 {
		t.Error("the routers of one middleware do not share its count")
	}
	other := newMiddleware(t, c, "other@file")
	if serve(other, "203.0.113.7:1", nil).Code != 200 {
		t.Error("another middleware shares the count")
	}
}

// A reload that changes the rule starts a new count and closes the old zone.
func TestReloadWithNewRule(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	h := newMiddleware(t, c, "changed@file")
	serve(h, "203.0.113.7:1", nil)
	old := middlewareOf(h).zone
	c2 := validConfig()
	c2.Limit = 2
	h2, err := newChecked(context.Background(), okHandler, c2, "changed@file")
	if err != nil {
		t.Fatal(err)
	}
	if middlewareOf(h2).zone == old {
		t.Fatal("a new rule reused the old zone")
	}
	for i, want := range []int{200, 200, 429} {
		if got := serve(h2, "203.0.113.7:1", nil).Code; got != want {
			t.Errorf("the new rule is not enforced from a fresh count: request %d got %d, want %d", i+1, got, want)
			break
		}
	}
	// Source, headers, status and message are not part of the zone.
	c3 := validConfig()
	c3.Limit = 2
	c3.Headers = "both"
	c3.StatusCode = 503
	h3, err := newChecked(context.Background(), okHandler, c3, "changed@file")
	if err != nil {
		t.Fatal(err)
	}
	if middlewareOf(h3).zone != middlewareOf(h2).zone {
		t.Error("a change of headers or status dropped the count")
	}
}

// 100 reloads, half of them with a changed rule, leave one zone and no
// extra goroutines behind.
func TestReloadsDoNotLeak(t *testing.T) {
	forget("leak@file")
	defer forget("leak@file")
	// goroutinesAtMost waits, bounded, for closed sweepers to return.
	goroutinesAtMost := func(max int) int {
		n := runtime.NumGoroutine()
		for deadline := time.Now().Add(5 * time.Second); n > max && time.Now().Before(deadline); n = runtime.NumGoroutine() {
			time.Sleep(5 * time.Millisecond)
		}
		return n
	}
	zones := registeredZones()
	before := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		c := validConfig()
		c.Limit = int64(10 + i%2)
		h, err := newChecked(context.Background(), okHandler, c, "leak@file")
		if err != nil {
			t.Fatal(err)
		}
		serve(h, "203.0.113.7:1", nil)
	}
	if after := goroutinesAtMost(before + 1); after > before+1 { // the one live zone's sweeper
		t.Errorf("goroutines: %d before 100 reloads, %d after", before, after)
	}
	if got := registeredZones(); got != zones+1 {
		t.Errorf("registry holds %d zones, want %d", got, zones+1)
	}
}
