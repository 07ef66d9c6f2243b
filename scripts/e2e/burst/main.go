// Command burst sends -n GET requests to the URLs of -urls in turn, -c at a
// time over keep-alive connections, and prints how they were answered, one
// line a status ("200 1944", "429 6056"), errors as "error N". It is the
// load of the reset tests (TestE2EReset in caddymodule/e2e and
// traefikplugin/e2e): enough requests, fast enough, that a hot key's
// leases are out when the key is reset, and that the window after the
// reset is used up.
//
//	burst -urls http://127.0.0.1:8081/hot,http://127.0.0.1:8082/hot -n 8000 -c 16
//
// Only loopback URLs are accepted, at most 100000 requests, and every
// request ends by -deadline.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	rawURLs := flag.String("urls", "", "comma-separated loopback URLs, sent to in turn")
	n := flag.Int("n", 1000, "requests (at most 100000)")
	c := flag.Int("c", 8, "requests at a time (at most 256)")
	deadline := flag.Duration("deadline", 30*time.Second, "when every request must have ended")
	flag.Parse()

	var urls []string
	for _, u := range strings.Split(*rawURLs, ",") {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "http" {
			log.Fatalf("-urls: %q is not an http URL", u)
		}
		if ip := net.ParseIP(p.Hostname()); ip == nil || !ip.IsLoopback() {
			log.Fatalf("-urls: %q is not on a loopback address", u)
		}
		urls = append(urls, u)
	}
	if *n < 1 || *n > 100000 || *c < 1 || *c > 256 {
		log.Fatal("-n must be 1..100000 and -c 1..256")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *c}}

	var next int64 = -1
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= int64(*n) || ctx.Err() != nil {
					return
				}
				status := "error"
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, urls[i%int64(len(urls))], nil)
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = strconv.Itoa(resp.StatusCode)
				}
				mu.Lock()
				counts[status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Println(k, counts[k])
	}
}
