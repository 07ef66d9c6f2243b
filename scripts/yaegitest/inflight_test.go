package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// concurrency is a service that records the most requests it held at
// once, each held for 10 ms.
type concurrency struct {
	mu        sync.Mutex
	now, most int
}

func (c *concurrency) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
}

// TestPluginInFlight runs inFlight interpreted, as labels: 12 clients of
// one key leave 3 at the service at most, alone and in front of a rate,
// in memory and in Redis (where the rate's call takes the slot); a refusal
// has Retry-After 1.
func TestPluginInFlight(t *testing.T) {
	b, _ := loadPlugin(t)
	rds := redistest.Start(t)
	for _, c := range []struct {
		name   string
		config map[string]any
	}{
		{"alone@docker", map[string]any{"inFlight": "3"}},
		{"rated@docker", map[string]any{"inFlight": "3", "window": "1m", "limit": "1000"}},
		{"redis@docker", map[string]any{"inFlight": "3", "inFlightTTL": "5s",
			"redis": map[string]any{"endpoints": rds.Addr(), "keyPrefix": "y:"}}},
		// The slot taken in the rate's call, through the client's call
		// prepared on two keys.
		{"redis-rated@docker", map[string]any{"inFlight": "3", "inFlightTTL": "5s", "window": "1m", "limit": "1000",
			"redis": map[string]any{"endpoints": rds.Addr(), "keyPrefix": "y:"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := b.createConfig(c.config)
			if err != nil {
				t.Fatal(err)
			}
			svc := &concurrency{}
			h, err := b.newChecked(svc, cfg, c.name)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			refused := 0
			for g := 0; g < 12; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4; i++ {
						w := get(h, "203.0.113.7:1", "")
						if w.Code == http.StatusTooManyRequests {
							mu.Lock()
							refused++
							mu.Unlock()
							if w.Header().Get("Retry-After") != "1" {
								t.Errorf("Retry-After %q, want 1", w.Header().Get("Retry-After"))
							}
						}
					}
				}()
			}
			wg.Wait()
			if svc.most != 3 {
				t.Fatalf("the service held %d at once, want exactly 3 (%d refused)", svc.most, refused)
			}
		})
	}
}

// TestPluginInFlightAllocs reports the interpreter's allocations a
// request of inFlight alone, of a rate alone and of both (memory).
func TestPluginInFlightAllocs(t *testing.T) {
	b, _ := loadPlugin(t)
	for _, c := range []struct {
		name   string
		config map[string]any
	}{
		{"rate@docker", map[string]any{"window": "1m", "limit": "100000000"}},
		{"inflight@docker", map[string]any{"inFlight": "3"}},
		{"inflight-noheaders@docker", map[string]any{"inFlight": "3", "headers": "none"}},
		{"both@docker", map[string]any{"inFlight": "3", "window": "1m", "limit": "100000000"}},
	} {
		h := b.build(t, c.config, c.name)
		r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
		r.RemoteAddr = "203.0.113.7:1"
		allocs := testing.AllocsPerRun(200, func() {
			h.ServeHTTP(httptest.NewRecorder(), r)
		})
		t.Logf("%s: %.0f allocations a request (with the recorder's)", c.name, allocs)
	}
}
