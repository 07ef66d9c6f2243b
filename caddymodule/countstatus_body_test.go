package caddymodule

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// A body written through io.Copy (the wrapper's ReadFrom) or a flush sends
// the response with 200: an error the handler returns afterwards cannot
// change the status the client got, so count_status charges by 200.
func TestCountStatusBodyWithoutWriteHeader(t *testing.T) {
	for name, write := range map[string]func(http.ResponseWriter){
		// A reader without WriteTo, as a proxied body: io.Copy calls ReadFrom.
		"io.Copy": func(w http.ResponseWriter) { io.Copy(w, io.LimitReader(strings.NewReader("streamed"), 100)) },
		"flush":   func(w http.ResponseWriter) { http.NewResponseController(w).Flush() },
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := newHandler(t, `{"rate_limits":{"login":{"window":"1m","limit":1,"count_status":[4]}}}`)
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
			*r = *r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
			caddyhttp.NewTestReplacer(r)
			w := httptest.NewRecorder()
			next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
				write(w)
				return caddyhttp.Error(http.StatusNotFound, nil)
			})
			h.ServeHTTP(w, r, next)
			if w.Code != 200 {
				t.Fatalf("the client got %d, want 200", w.Code)
			}
			if s, _, reached := login(t, h, "203.0.113.7", 200); s != 200 || !reached {
				t.Fatalf("after a response sent as 200: %d, want 200 (nothing charged)", s)
			}
		})
	}
}
