package yaegitest

import (
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestPluginRemovedMiddlewaresStop: under yaegi, the sweepers of
// middlewares created with fresh names and dropped, as a provider does on
// every deploy, end once their zones have been idle (two windows, at
// least 10 s), and a middleware kept through that idle time still serves
// right afterwards: its zone, woken by the request, counts again.
func TestPluginRemovedMiddlewaresStop(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the idle time")
	}
	b, _ := loadPlugin(t)
	config := map[string]any{"window": "1s", "limit": "2"}
	kept := b.build(t, config, "kept@docker")
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		h := b.build(t, config, "fresh-"+strconv.Itoa(i)+"@docker")
		for j := 0; j < 3; j++ {
			get(h, "203.0.113."+strconv.Itoa(j)+":1", "")
		}
	}
	peak := runtime.NumGoroutine()
	// One sweeper each; goroutines of the tests before may end meanwhile
	// (a peak of 100 after 51 was seen), hence the slack of 5.
	if peak < before+45 {
		t.Fatalf("goroutines: %d before, %d with 50 middlewares: no sweepers?", before, peak)
	}
	if get(kept, "203.0.113.7:1", "").Code != http.StatusOK || get(kept, "203.0.113.7:1", "").Code != http.StatusOK ||
		get(kept, "203.0.113.7:1", "").Code != http.StatusTooManyRequests {
		t.Fatal("limit 2 not enforced")
	}
	// The kept zone sleeps last, once empty (a window) and idle for 10 s
	// after its last request; other goroutines of the process may end
	// meanwhile, so the count falling below before is not enough: wait
	// out the kept zone's idle time too, then for the count to settle.
	keptLast := time.Now()
	n := runtime.NumGoroutine()
	for deadline, settled := time.Now().Add(40*time.Second), time.Now(); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if m := runtime.NumGoroutine(); m != n {
			n, settled = m, time.Now()
		}
		if n < before && time.Since(keptLast) > 12*time.Second && time.Since(settled) > 2*time.Second {
			break
		}
	}
	// The kept middleware's zone sleeps too: fewer than before.
	if n >= before {
		t.Fatalf("goroutines: %d before, %d at the peak, %d after the idle time", before, peak, n)
	}
	t.Logf("goroutines: %d before, %d at the peak, %d after the idle time", before, peak, n)
	if get(kept, "203.0.113.7:1", "").Code != http.StatusOK || get(kept, "203.0.113.7:1", "").Code != http.StatusOK ||
		get(kept, "203.0.113.7:1", "").Code != http.StatusTooManyRequests {
		t.Fatal("the middleware kept through the idle time does not limit right")
	}
	// Woken, its zone sweeps again, and a reload finds its count.
	if n2 := runtime.NumGoroutine(); n2 != n+1 {
		t.Errorf("goroutines: %d asleep, %d woken, want one more", n, n2)
	}
	reloaded := b.build(t, config, "kept@docker")
	if get(reloaded, "203.0.113.7:1", "").Code != http.StatusTooManyRequests {
		t.Error("a reload after the wake-up lost the count")
	}
}
