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
// and no slot is left in the cluster afterwards.
func TestInFlightRedisCluster(t *testing.T) {
	addrs := redistest.Cluster(t)
	list, _ := json.Marshal(addrs)
	config := `{"rate_limits":{"clu":{"key":"{http.request.header.X-Key}","in_flight":3}},` +
		`"redis":{"addresses":` + string(list) + `,"key_prefix":"ifc:"}}`
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
