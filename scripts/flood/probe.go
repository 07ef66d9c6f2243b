// Command probe is the client side of bench-flood.sh, next to wrk's flood:
// a client at its limit that keeps knocking, and new well-behaved clients
// that arrive while the flood lasts. Every loop is bounded in time and count.
//
//	probe -url U -kind header -limit 5 -prime
//	probe -url U -kind header -limit 5 -knock -for 7s
//
// -kind says where a client's key goes: "header" sets X-K (Caddy's zone
// keys on it), "xff" sets X-Forwarded-For (Traefik's ipStrategy.depth 1).
// The limited client is X-K "limited-NONCE" or 192.0.2.1; new client i is
// X-K "new-NONCE-i" or an address of 198.51.100.0/24 and 203.0.113.0/24:
// none of them is a flood key (10.0.0.0/8, "fNONCE-i").
//
// -prime sends the limited client's -limit requests, which must all be
// answered 200, then one more, which must be answered 429.
//
// -knock, for -for, sends the limited client's request every -every and
// starts a new client every -arrive, which sends its -limit requests
// -spread apart (it starts only if they all fit in -for). It prints one
// line: slipped (200s of the limited client), tried, denied (429s), other
// (other statuses and errors), and the same for the new clients.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

type tally struct{ ok, tried, denied, other atomic.Int64 }

func (t *tally) add(status int) {
	t.tried.Add(1)
	switch status {
	case http.StatusOK:
		t.ok.Add(1)
	case http.StatusTooManyRequests:
		t.denied.Add(1)
	default:
		t.other.Add(1)
	}
}

type prober struct {
	url    string
	header string
	client *http.Client
}

// get sends one request as the client with that key and returns its
// status, 0 on a transport error.
func (p *prober) get(key string) int {
	req, err := http.NewRequest(http.MethodGet, p.url, nil)
	if err != nil {
		return 0
	}
	req.Header.Set(p.header, key)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func main() {
	url := flag.String("url", "", "the limited route")
	kind := flag.String("kind", "header", `where the key goes: "header" (X-K) or "xff" (X-Forwarded-For)`)
	nonce := flag.String("nonce", "0", "distinguishes this run's header keys")
	limit := flag.Int("limit", 5, "the limit per window")
	prime := flag.Bool("prime", false, "put the limited client at its limit")
	knock := flag.Bool("knock", false, "knock with the limited client and bring new clients")
	dur := flag.Duration("for", 7*time.Second, "how long to knock")
	every := flag.Duration("every", 50*time.Millisecond, "the limited client's interval")
	arrive := flag.Duration("arrive", 200*time.Millisecond, "the interval between new clients")
	spread := flag.Duration("spread", 300*time.Millisecond, "the interval between a new client's requests")
	timeout := flag.Duration("timeout", 2*time.Second, "per request")
	flag.Parse()

	p := &prober{url: *url, client: &http.Client{
		Timeout:   *timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true},
	}}
	limited, newKey := "limited-"+*nonce, func(i int) string { return "new-" + *nonce + "-" + strconv.Itoa(i) }
	maxNew := 1 << 20
	switch *kind {
	case "header":
		p.header = "X-K"
	case "xff":
		p.header = "X-Forwarded-For"
		limited = "192.0.2.1"
		maxNew = 2 * 254
		newKey = func(i int) string {
			if i < 254 {
				return "198.51.100." + strconv.Itoa(i+1)
			}
			return "203.0.113." + strconv.Itoa(i-254+1)
		}
	default:
		fail("unknown -kind %q", *kind)
	}

	switch {
	case *prime:
		for i := 1; i <= *limit; i++ {
			if s := p.get(limited); s != http.StatusOK {
				fail("priming: request %d of the limited client got %d, want 200", i, s)
			}
		}
		if s := p.get(limited); s != http.StatusTooManyRequests {
			fail("priming: request %d of the limited client got %d, want 429", *limit+1, s)
		}
	case *knock:
		var lim, fresh tally
		var wg sync.WaitGroup
		start := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(*every)
			defer tick.Stop()
			for time.Since(start) < *dur {
				lim.add(p.get(limited))
				<-tick.C
			}
		}()
		budget := time.Duration(*limit-1) * *spread
		clients := 0
		for ; clients < maxNew && time.Since(start)+budget < *dur; clients++ {
			wg.Add(1)
			go func(key string) {
				defer wg.Done()
				for i := 0; i < *limit; i++ {
					if i > 0 {
						time.Sleep(*spread)
					}
					fresh.add(p.get(key))
				}
			}(newKey(clients))
			time.Sleep(*arrive)
		}
		wg.Wait()
		fmt.Printf("slipped %d tried %d denied %d other %d new_ok %d new_tried %d new_denied %d new_other %d new_clients %d\n",
			lim.ok.Load(), lim.tried.Load(), lim.denied.Load(), lim.other.Load(),
			fresh.ok.Load(), fresh.tried.Load(), fresh.denied.Load(), fresh.other.Load(), clients)
	default:
		fail("give -prime or -knock")
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "probe: "+format+"\n", args...)
	os.Exit(1)
}
