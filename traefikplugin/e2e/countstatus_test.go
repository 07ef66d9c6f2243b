//go:build !race

package e2e

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2ECountStatus: countStatus ["401"] in memory counts only the 401s
// (checkCountStatus; TestE2ERedisShared checks it through Redis), and a
// server-sent event stream through it streams.
func TestE2ECountStatus(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	tr := start(t, traefiktest.Options{}, "fixtures/countstatus/dynamic.yml", map[string]any{"Backend": be.URL()})

	t.Run("only the 401s count", func(t *testing.T) {
		checkCountStatus(t, tr, tr, "/login")
	})
	t.Run("a server-sent event stream streams", func(t *testing.T) {
		// Its first event must reach the client while the stream is still
		// open (the backend holds it 10 s). Under yaegi the proxy's
		// flushes cannot reach the plugin's response writer; the plugin
		// flushes streams itself. From an address of its own: a key
		// with a budget left.
		url := tr.URL("/login/events")
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.9.1")}}
		c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s from 127.0.9.1: %v", url, err)
		}
		defer resp.Body.Close()
		conn := resp.Body
		type read struct {
			text string
			err  error
		}
		got := make(chan read, 1)
		go func() {
			buf := make([]byte, 64)
			var text []byte
			for len(text) < len("data: 1\n\n") {
				n, err := conn.Read(buf)
				text = append(text, buf[:n]...)
				if err != nil {
					got <- read{string(text), err}
					return
				}
			}
			got <- read{string(text), nil}
		}()
		select {
		case r := <-got:
			if r.text != "data: 1\n\n" || r.err != nil {
				t.Fatalf("GET %s from 127.0.9.1: %d, read %q (%v), want the first event \"data: 1\" while the stream is open", url, resp.StatusCode, r.text, r.err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("GET %s from 127.0.9.1: %d, no event within 3 s while the stream is open: the proxy's flushes do not reach the client", url, resp.StatusCode)
		}
	})
}
