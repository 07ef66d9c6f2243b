//go:build !race

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// middleware is one windowlimit middleware of fixtures/options: its name
// (its router's too) and its settings, one "key: value" line each.
type middleware struct {
	Name     string
	Settings []string
}

// typo is a middleware misconfigured at one level, and the words of the
// error Traefik's log must show for it.
type typo struct {
	name, setting, want string
}

// typos holds a misspelled option at each level (top, sourceCriterion,
// ipStrategy, redis, persist), typed as in a file and, in the names ending
// in -s, with every value a string as labels give them, and values of the
// wrong kind.
var typos = []typo{
	{"top-typo", `countStatuss: ["401"]`, "unknown option countStatuss; did you mean countStatus?"},
	{"top-typo-s", `countStatuss: "401"`, "unknown option countStatuss; did you mean countStatus?"},
	{"limit-typo-s", `limt: "3"`, "unknown option limt; did you mean limit?"},
	{"source-typo", `sourceCriterion: {requestHeader: X-Key}`, "unknown option sourceCriterion.requestHeader; did you mean requestHeaderName?"},
	{"source-typo-s", `sourceCriterion: {requestHeader: "X-Key"}`, "unknown option sourceCriterion.requestHeader; did you mean requestHeaderName?"},
	{"ip-typo", `sourceCriterion: {ipStrategy: {dept: 1}}`, "unknown option sourceCriterion.ipStrategy.dept; did you mean depth?"},
	{"ip-typo-s", `sourceCriterion: {ipStrategy: {dept: "1"}}`, "unknown option sourceCriterion.ipStrategy.dept; did you mean depth?"},
	{"redis-typo", `redis: {endpoint: ["127.0.0.1:1"]}`, "unknown option redis.endpoint; did you mean endpoints?"},
	{"redis-typo-s", `redis: {endpoint: "127.0.0.1:1"}`, "unknown option redis.endpoint; did you mean endpoints?"},
	{"persist-typo", `persist: {directory: /tmp/wl-persist-typo, intervall: 1s}`, "unknown option persist.intervall; did you mean interval?"},
	{"persist-typo-s", `persist: {directory: "/tmp/wl-persist-typo", intervall: "1s"}`, "unknown option persist.intervall; did you mean interval?"},
	{"kind-s", `maxKeys: "lots"`, `maxKeys: must be a whole number in decimal, got "lots"`},
	{"block-s", `redis: "127.0.0.1:6379"`, `redis: must be a block of options, got "127.0.0.1:6379"`},
	{"huge-s", `maxKeys: "1000000000000"`, "maxKeys: too large, got 1000000000000"},
}

// optionsMiddlewares returns the middlewares of TestE2EOptions, each
// setting passed through fix.
func optionsMiddlewares(fix func(string) string) []middleware {
	mws := []middleware{
		{"spelled-limit", []string{`WINDOW: "1m"`, `Limit: "1"`, `sourcecriterion: {IPSTRATEGY: {Depth: "1"}}`}},
		{"decimal-limit", []string{`window: "1m"`, `limit: "010"`}},
	}
	for _, ty := range typos {
		s := fix(ty.setting)
		switch {
		case ty.name == "limit-typo-s":
			mws = append(mws, middleware{ty.name, []string{`window: "1m"`, s}})
		case strings.HasSuffix(ty.name, "-s"):
			mws = append(mws, middleware{ty.name, []string{`window: "1m"`, `limit: "1"`, s}})
		default:
			mws = append(mws, middleware{ty.name, []string{"window: 1m", "limit: 1", s}})
		}
	}
	return mws
}

// TestE2EOptions: on an instance whose entry point trusts loopback's
// X-Forwarded-For and which has a catch-all router, a middleware with a
// misspelled option or a value of the wrong kind refuses every request of
// its router with 500: never served unlimited by the catch-all, nor with
// one count for every client behind the proxy. Its router shows as enabled
// in the API; Traefik's log names the option at load, and not again for
// each request. The same options spelled in other cases limit each client
// apart; numbers are read in decimal; a reload that fixes one brings its
// limit back.
func TestE2EOptions(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	same := func(s string) string { return s }
	tr := start(t, traefiktest.Options{TrustLoopback: true, API: true}, "fixtures/options/dynamic.yml",
		map[string]any{"Backend": be.URL(), "Middlewares": optionsMiddlewares(same)})

	// clients sends one request from each of four clients behind the
	// proxy, then the first again, and returns the statuses.
	clients := func(path string) string {
		var codes []string
		for _, i := range []int{1, 2, 3, 4, 1} {
			_, resp := e2etest.Get(t, tr.URL(path), "X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
			codes = append(codes, strconv.Itoa(resp.Status))
		}
		return strings.Join(codes, " ")
	}
	t.Run("options in other cases: a count per client", func(t *testing.T) {
		if got := clients("/spelled-limit/"); got != "200 200 200 200 429" {
			t.Fatalf("GET /spelled-limit/ [X-Forwarded-For: 198.51.100.N] for N = 1 2 3 4 1 (WINDOW, Limit: \"1\", sourcecriterion.IPSTRATEGY.Depth): %s, want 200 200 200 200 429", got)
		}
	})
	t.Run(`limit "010" is 10`, func(t *testing.T) {
		var codes []string
		for range 11 {
			_, resp := e2etest.Get(t, tr.URL("/decimal-limit/"))
			codes = append(codes, strconv.Itoa(resp.Status))
		}
		if got, want := strings.Join(codes, " "), strings.Repeat("200 ", 10)+"429"; got != want {
			t.Fatalf("11 x GET /decimal-limit/ (limit \"010\"): %s, want %s (decimal as written)", got, want)
		}
	})
	for _, ty := range typos {
		t.Run(ty.name, func(t *testing.T) {
			said := `windowlimit: error: middleware "` + ty.name + `@file" is misconfigured: ` + regexp.QuoteMeta(ty.want)
			if !tr.Logged(said, 2*time.Second) {
				t.Fatalf("%s: Traefik's log does not say %q; its lines of %s: %q", ty.setting, ty.want, ty.name, tr.LogLines(regexp.QuoteMeta(ty.name)))
			}
			misconfigured := regexp.QuoteMeta(`"` + ty.name + `@file" is misconfigured`)
			before := len(tr.LogLines(misconfigured))
			if got := clients("/" + ty.name + "/"); got != "500 500 500 500 500" {
				t.Fatalf("%s: GET /%s/ from 4 clients behind the proxy, then the first: %s, want 500 x 5: the route must be refused, not served unlimited by the catch-all", ty.setting, ty.name, got)
			}
			req, resp := e2etest.Get(t, tr.URL("/"+ty.name+"/"))
			if !strings.HasPrefix(resp.Body, "rate limit misconfigured: ") {
				t.Fatalf("%s: %v: %v, want the body \"rate limit misconfigured: ...\"", ty.setting, req, resp)
			}
			if after := len(tr.LogLines(misconfigured)); after != before {
				t.Fatalf("%s: 6 refused requests logged %d more lines, want none within the minute", ty.setting, after-before)
			}
			api := tr.APIURL("/api/http/routers/" + ty.name + "@file")
			if req, resp := e2etest.Get(t, api); !strings.Contains(resp.Body, `"status":"enabled"`) {
				t.Fatalf("%s: %v: %v, want the router \"status\":\"enabled\"", ty.setting, req, resp)
			}
		})
	}
	t.Run("a reload that fixes ip-typo brings its limit back", func(t *testing.T) {
		fix := func(s string) string { return strings.ReplaceAll(s, "dept:", "depth:") }
		tr.Render("fixtures/options/dynamic.yml", map[string]any{"Backend": be.URL(), "Middlewares": optionsMiddlewares(fix)})
		if err := e2etest.GetRequest(tr.URL("/ip-typo/"), traefiktest.StartTimeout, e2etest.StatusIs(200)); err != nil {
			t.Fatalf("ip-typo: still refused after the reload that fixes it: %v", err)
		}
		if got := clients("/ip-typo/"); got != "200 200 200 200 429" {
			t.Fatalf("ip-typo fixed (%s): GET /ip-typo/ from 4 clients behind the proxy, then the first: %s, want 200 200 200 200 429", fmt.Sprint(fix(typos[5].setting)), got)
		}
	})
}
