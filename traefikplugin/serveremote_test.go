package traefikplugin

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// fixedStore decides every item as d.
type fixedStore struct{ d *ratelimit.Decision }

func (s fixedStore) Take(_ context.Context, _ time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	for i := range items {
		out[i] = *s.d
	}
	return s.d.Allowed, nil
}

// TestServeRemoteMatchesGeneral: for every decision a guard can return,
// in and beyond the decimals table, serveRemote answers exactly as the
// general path (serveOther, decided) does, keyed by the remote address or
// by a source.
func TestServeRemoteMatchesGeneral(t *testing.T) {
	var d ratelimit.Decision
	for _, header := range []string{"", "X-User"} {
		c := validConfig()
		if header != "" {
			c.SourceCriterion = &SourceCriterion{RequestHeaderName: header}
		}
		remote, general := newMiddleware(t, c, "remote@file").(*Middleware), newMiddleware(t, c, "general@file").(*Middleware)
		for _, m := range []*Middleware{remote, general} {
			g, err := ratelimit.NewGuard(fixedStore{&d}, ratelimit.GuardOptions{DenyCacheSize: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			useStore(m, g)
		}
		remote.remote = true
		for _, tc := range []ratelimit.Decision{
			{Allowed: true, Remaining: 5, ResetAfter: 30 * time.Second},
			{Allowed: true, Remaining: 0},
			{Allowed: true, Remaining: 19, ResetAfter: 1500 * time.Millisecond},
			{Remaining: 0, RetryAfter: 500 * time.Millisecond, ResetAfter: 66 * time.Second},
			{Remaining: 0, RetryAfter: time.Second, ResetAfter: time.Second},
			{Remaining: 2, RetryAfter: 61500 * time.Millisecond, ResetAfter: 65 * time.Second},
			{Remaining: 0, RetryAfter: -time.Second, ResetAfter: -2 * time.Second},
			{Allowed: true, Remaining: 4095, ResetAfter: 4095 * time.Second},
			{Allowed: true, Remaining: 4096},
			{Allowed: true, Remaining: -1},
			{Allowed: true, Remaining: 1, ResetAfter: 4096 * time.Second},
			{Remaining: 1, RetryAfter: 4096 * time.Second},
			{Remaining: 1, RetryAfter: 4095 * time.Second},
		} {
			d = tc
			d.Limit = 20
			wr := serve(remote, "203.0.113.7:1", map[string][]string{"X-User": {"alice"}})
			wg := serve(general, "203.0.113.7:1", map[string][]string{"X-User": {"alice"}})
			if wr.Code != wg.Code || !reflect.DeepEqual(wr.Header(), wg.Header()) || wr.Body.String() != wg.Body.String() {
				t.Errorf("source %q, %+v:\nserveRemote %d %v %q\ngeneral     %d %v %q", header, d, wr.Code, wr.Header(), wr.Body, wg.Code, wg.Header(), wg.Body)
			}
		}
	}
}

// TestServeRemoteChosen: a middleware with a redis block takes
// serveRemote exactly when the inline path's conditions but the source
// hold.
func TestServeRemoteChosen(t *testing.T) {
	for name, tc := range map[string]struct {
		modify func(c *Config)
		want   bool
	}{
		"plain":       {func(c *Config) {}, true},
		"source":      {func(c *Config) { c.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-User"} }, true},
		"ietf":        {func(c *Config) { c.Headers = "ietf" }, false},
		"dry run":     {func(c *Config) { c.DryRun = true }, false},
		"huge limit":  {func(c *Config) { c.Limit = 100000 }, false},
		"countStatus": {func(c *Config) { c.CountStatus = []string{"500"} }, false},
	} {
		c := redisConfig("127.0.0.1:1", 5)
		tc.modify(c)
		m := redisMiddleware(t, c, "chosen@file").(*Middleware)
		if m.remote != tc.want || m.guard == nil {
			t.Errorf("%s: remote %v, guard %v", name, m.remote, m.guard != nil)
		}
	}
}
