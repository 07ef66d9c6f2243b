package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestInFlightRedisCluster: two handlers (two instances) on one Redis
// Cluster, through go-redis: 12 clients on each of 6 keys (spread over
// the cluster's slots) leave exactly 3 of a key at the backend at most,
// and no slot is left in the cluster afterwards; alone, and beside a rate
// (the slot taken in the rate's call).
func TestInFlightRedisCluster(t *testing.T) {
	addrs := redistest.Cluster(t)
	list, _ := json.Marshal(addrs)
	for _, c := range []struct{ name, zone string }{
		{"alone", `"in_flight":3`},
		{"with_rate", `"in_flight":3,"window":"1m","limit":100000`},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := `{"rate_limits":{"clu` + c.name + `":{"key":"{http.request.header.X-Key}",` + c.zone + `}},` +
				`"redis":{"addresses":` + string(list) + `,"key_prefix":"ifc:"}}`
			testInFlightCluster(t, config)
		})
	}
}

func testInFlightCluster(t *testing.T, config string) {
	a, _ := newHandler(t, config)
	b, _ := newHandler(t, config)
	be := newBackend(func(*http.Request) { time.Sleep(20 * time.Millisecond) })
	var wg sync.WaitGroup
	for k := 0; k < 6; k++ {
		for c := 0; c < 12; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := a
				if c%2 == 1 {
					h = b
				}
				for i := 0; i < 3; i++ {
					if code, _ := send(context.Background(), h, "key"+strconv.Itoa(k), be); code != 200 && code != 429 {
						t.Errorf("status %d", code)
					}
				}
			}()
		}
	}
	wg.Wait()
	for k := 0; k < 6; k++ {
		if m := be.mostOf("key" + strconv.Itoa(k)); m != 3 {
			t.Errorf("key %d: the backend held %d at once through two instances, want exactly 3", k, m)
		}
	}
	l := a.zones[0].inflight
	waitUntil(t, func() bool {
		for k := 0; k < 6; k++ {
			if n, err := l.Count(context.Background(), "key"+strconv.Itoa(k)); err != nil || n != 0 {
				return false
			}
		}
		return true
	})
}

// TestInFlightCountStatusRedis: in_flight beside count_status on Redis,
// the slot taken with the request's reservation: responses outside the
// counted statuses are given back, the counted ones fill the limit, then
// the rate refuses (its own 429, not the slot's), and no slot is left.
func TestInFlightCountStatusRedis(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHandler(t, `{"rate_limits":{"cs":{"key":"{http.request.header.X-Key}","in_flight":1,"window":"1m","limit":3,"count_status":[401]}},`+
		`"redis":{"address":"`+srv.Addr()+`","key_prefix":"ifcs:"}}`)
	status := func(code int) caddyhttp.Handler {
		return caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(code)
			return nil
		})
	}
	ctx := context.Background()
	l := h.zones[0].inflight
	// The slot's release goes to Redis in the background: each request
	// waits for the one before it to free its slot.
	free := func() {
		t.Helper()
		waitUntil(t, func() bool {
			n, err := l.Count(ctx, "k")
			return err == nil && n == 0
		})
	}
	for i := 0; i < 5; i++ {
		free()
		if code, _ := send(ctx, h, "k", status(200)); code != 200 {
			t.Fatalf("200 number %d, not counted: %d", i+1, code)
		}
	}
	for i := 0; i < 3; i++ {
		free()
		if code, _ := send(ctx, h, "k", status(401)); code != 401 {
			t.Fatalf("401 number %d: %d, want it served (and counted)", i+1, code)
		}
	}
	free()
	code, hdr := send(ctx, h, "k", status(401))
	if code != 429 || hdr.Get("X-Ratelimit-Limit") != "3" {
		t.Fatalf("after 3 counted: %d with limit %q, want the rate's 429 (limit 3)", code, hdr.Get("X-Ratelimit-Limit"))
	}
	free()
}
