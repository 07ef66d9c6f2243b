//go:build !race

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// attackSite is the site of TestE2ECountStatusAttacks: a login behind
// reverse_proxy and a zone of limit 5 a minute counting 401s, in memory
// (/mem/) and in Redis (/redis/), on a server speaking h1 and h2c.
const attackSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
	servers {
		protocols h1 h2c
	}
}
:{{.Web}} {
	bind 127.0.0.1
	handle /mem/* {
		rate_limit {
			zone login_mem {
				window 1m
				limit 5
				count_status 401
			}
		}
		reverse_proxy {{.Backend}}
	}
	handle /redis/* {
		rate_limit {
			zone login_redis {
				window 1m
				limit 5
				count_status 401
			}
			store redis {
				address {{.Redis}}
				key_prefix atk:
			}
		}
		reverse_proxy {{.Backend}}
	}
}
`

// attackLimit is the zones' limit: the most attempts the backend may get
// from one attacker in the window.
const attackLimit = 5

// TestE2ECountStatusAttacks runs scripts/e2e/attack's attacks, each
// from its own loopback address, on a login whose zone counts 401s: each
// leaves the proxy without a final status to count by, and the backend
// must get at most 5 attempts of each. Then 12 logins with the password
// and 7 wrong ones still give 12 x 200, 5 x 401, 2 x 429.
func TestE2ECountStatusAttacks(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	be := startBackend(t)
	rds := redistest.Start(t)
	c := newCaddy(t)
	c.render(attackSite, map[string]any{"Backend": be.Addr(), "Redis": rds.Addr()})
	c.start()
	attack := program(t, "attack")

	for _, store := range []struct{ name, path, net string }{
		{"memory", "/mem/login", "127.0.1"},
		{"redis", "/redis/login", "127.0.2"},
	} {
		url := c.url(store.path)
		for _, a := range []struct {
			name, from, query, results string
			args                       []string
		}{
			// 30 tries, each reading the status line, then resetting the
			// connection (SO_LINGER 0) while the proxy is mid-body.
			{"reset", ".1", "?hold=10s&pad=65536", "401|429", []string{"-mode", "reset", "-n", "30"}},
			// The same after the headers and the body's first byte.
			{"midbody", ".2", "?hold=10s&pad=65536", "401|429", []string{"-mode", "midbody", "-n", "30"}},
			// 30 h2c streams of one connection, each reset as its HEADERS come.
			{"h2reset", ".3", "?hold=10s&pad=65536", "401|429", []string{"-mode", "h2reset", "-n", "30"}},
			// 20 guesses given up after 300 ms, while a wrong password is
			// answered after 500 ms and the right one, the 20th, at once.
			{"tarpit", ".4", "?wait=500ms", "timeout|200|429", []string{"-mode", "tarpit", "-n", "20", "-timeout", "300ms"}},
			// 200 tries at once, each on its own connection.
			{"concurrent", ".5", "?wait=200ms", "401|429", []string{"-mode", "concurrent", "-n", "200"}},
			// 200 tries at once as streams of one h2c connection.
			{"h2concurrent", ".6", "?wait=200ms", "401|429", []string{"-mode", "h2concurrent", "-n", "200"}},
		} {
			t.Run(store.name+"/"+a.name, func(t *testing.T) {
				from := store.net + a.from
				args := append([]string{"-from", from, "-url", url + a.query}, a.args...)
				sent := "attack " + strings.Join(args, " ")
				lines, stderr := run(t, attack, time.Minute, args...)
				got := be.count(t, from)
				seen := 0
				ran := len(lines) > 0 && stderr == ""
				for _, l := range lines {
					if l == "401" {
						seen++
					}
					if !regexp.MustCompile("^(" + a.results + ")$").MatchString(l) {
						ran = false
					}
				}
				switch {
				case !ran:
					t.Errorf("%s: the attack did not run as meant: %s; %s", sent, tally(lines), stderr)
				case got < 1:
					t.Errorf("%s: the backend got %d attempts, want 1..%d: is the route right?", sent, got, attackLimit)
				case a.name != "tarpit" && got != seen:
					t.Errorf("%s: the backend got %d attempts, the client saw %d x 401", sent, got, seen)
				case got > attackLimit:
					t.Errorf("%s: the backend got %d login attempts within the window, limit %d; the client saw %s", sent, got, attackLimit, tally(lines))
				default:
					t.Logf("%s: the backend got %d, limit %d; the client saw %s", sent, got, attackLimit, tally(lines))
				}
			})
		}
		t.Run(store.name+"/sequence", func(t *testing.T) {
			from := store.net + ".7"
			args := []string{"-mode", "sequence", "-right", "12", "-n", "7", "-from", from, "-url", url}
			lines, stderr := run(t, attack, time.Minute, args...)
			want := strings.Repeat("200 ", 12) + strings.Repeat("401 ", 5) + "429 429"
			if got, n := strings.Join(lines, " "), be.count(t, from); got != want || n != 17 {
				t.Errorf("attack %s (12 logins with the password, then 7 wrong): %q, want %q; the backend got %d, want 17; %s",
					strings.Join(args, " "), got, want, n, stderr)
			}
		})
	}
}
