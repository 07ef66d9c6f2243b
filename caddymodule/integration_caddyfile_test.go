package caddymodule

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// loadCaddyfile posts a Caddyfile to the running Caddy's /load, as `caddy
// reload` does, and returns the status of the answer and its error, or
// its body when it has none.
func loadCaddyfile(t *testing.T, config string) (int, string) {
	t.Helper()
	return loadConfig(t, config, "text/caddyfile")
}

// loadConfig is loadCaddyfile for a config of any content type (JSON:
// "application/json").
func loadConfig(t *testing.T, config, contentType string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://localhost:"+strconv.Itoa(adminPort)+"/load", contentType, strings.NewReader(config))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var answer struct{ Error string }
	if json.Unmarshal(body, &answer) != nil || answer.Error == "" {
		return resp.StatusCode, string(body)
	}
	return resp.StatusCode, answer.Error
}

// A real Caddy refuses, while adapting the Caddyfile (before any module
// is provisioned), a misspelled subdirective at every level with the one
// meant, and every combination that cannot run with its fix, each at the
// line to change; the running config keeps serving.
func TestIntegrationCaddyfileErrorsSayTheFix(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	good := siteConfig(port, `rate_limit {
		zone ierr {
			window 1m
			limit 1
		}
	}`)
	tc.InitServer(good, "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	if r, _ := get(t, tc, url); r.StatusCode != 200 {
		t.Fatalf("first request: %d, want 200", r.StatusCode)
	}

	zone := "\t\tzone api {\n\t\t\twindow 1m\n\t\t\tlimit 5\n\t\t}\n"
	tests := []struct {
		name, block, want string
	}{
		{"zone", "rate_limit {\n\t\tzone api {\n\t\t\twindow 1m\n\t\t\tlimt 5" + badMark + "\n\t\t}\n\t}",
			`zone "api": unknown subdirective "limt" (did you mean "limit"?)`},
		{"handler", "rate_limit {\n" + zone + "\t\theader both" + badMark + "\n\t}",
			`unknown subdirective "header" (did you mean "headers"?)`},
		{"store redis", "rate_limit {\n" + zone + "\t\tstore redis {\n\t\t\taddres 127.0.0.1:6379" + badMark + "\n\t\t}\n\t}",
			`store redis: unknown subdirective "addres" (did you mean "address"?)`},
		{"persist", "rate_limit {\n" + zone + "\t\tpersist {\n\t\t\tinterva 30s" + badMark + "\n\t\t}\n\t}",
			`persist: unknown subdirective "interva" (did you mean "interval"?)`},
		{"persist with store redis", "rate_limit {\n" + zone + "\t\tstore redis 127.0.0.1:6379\n\t\tpersist {" + badMark + "\n\t\t\tinterval 30s\n\t\t}\n\t}",
			"persist: Redis keeps the counts of this rate_limit's zones (it persists them by its own configuration), so there is nothing to save: " +
				"remove persist; or use two rate_limit blocks, one with store redis and one without (the zones to count in memory and save); " +
				"or add on_store_error local, to save the memory zones that decide while Redis fails"},
		{"address without a port", "rate_limit {\n" + zone + "\t\tstore redis 127.0.0.1" + badMark + "\n\t}",
			`store redis: address: "127.0.0.1" has no port: write 127.0.0.1:6379`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := siteConfig(port, tt.block)
			status, body := loadCaddyfile(t, bad)
			at := ", at Caddyfile:" + strconv.Itoa(markedLine(t, bad))
			if status != http.StatusBadRequest || !strings.Contains(body, "adapting config using caddyfile adapter") ||
				!strings.Contains(body, tt.want+at) {
				t.Errorf("loading\n%s\ngot %d %s\nwant 400, refused while adapting, with %q", bad, status, body, tt.want+at)
			}
		})
	}
	t.Run("global option", func(t *testing.T) {
		bad := strings.Replace(good, "\tskip_install_trust\n", "\tskip_install_trust\n\trate_limit {\n\t\tstroe redis"+badMark+"\n\t}\n", 1)
		status, body := loadCaddyfile(t, bad)
		want := `rate_limit global option: unknown subdirective "stroe" (did you mean "store"?), at Caddyfile:` + strconv.Itoa(markedLine(t, bad))
		if status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("loading\n%s\ngot %d %s\nwant 400 with %q", bad, status, body, want)
		}
	})
	// The running config is untouched and still limits.
	if r, _ := get(t, tc, url); r.StatusCode != 429 {
		t.Fatalf("after the refused loads: %d, want 429 (the first config, limit 1)", r.StatusCode)
	}
}

// `store redis <address>` and `store redis <URL>`, as users write them,
// count in that Redis.
func TestIntegrationStoreRedisOnOneLine(t *testing.T) {
	srv := redistest.Start(t)
	tc := newTester(t)
	port := freePort(t)
	for _, store := range []string{"store redis " + srv.Addr(), "store redis redis://" + srv.Addr()} {
		t.Run(store, func(t *testing.T) {
			zone := "ione" + strconv.Itoa(len(store))
			tc.InitServer(siteConfig(port, `rate_limit {
		zone `+zone+` {
			key {query.who}
			window 1m
			limit 5
		}
		`+store+`
		on_store_error deny
	}`), "caddyfile")
			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/?who=alice"
			redistest.ExpectLimited(t, srv, "wl:"+zone+":{alice}", func() (int, http.Header) {
				resp, _ := get(t, tc, url)
				return resp.StatusCode, resp.Header
			})
		})
	}
}
