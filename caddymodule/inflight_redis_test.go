package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

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
