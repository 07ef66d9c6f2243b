package e2etest

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// AttackLimit is the limit of the logins CountStatusAttacks attacks: the
// most attempts the backend may get from one attacker in the window.
const AttackLimit = 5

// CountStatusAttacks runs scripts/e2e/attack's attacks, each from its own
// loopback address, on two logins in front of be whose zones (limit
// AttackLimit a minute, counting 401s) keep their counts in memory
// (url("/mem/login")) and in Redis (url("/redis/login")), on a server
// speaking h1 and h2c. Each attack leaves the proxy without a final
// status to count by, and the backend must get at most AttackLimit
// attempts of each: the check counts a request before it is passed on,
// and gives the count back only for a final status not listed. Then 12
// logins with the password and 7 wrong ones still give 12 x 200, 5 x 401,
// 2 x 429.
func CountStatusAttacks(t *testing.T, be *Backend, url func(path string) string) {
	t.Helper()
	attack := Program(t, "attack")
	for _, store := range []struct{ name, path, net string }{
		{"memory", "/mem/login", "127.0.1"},
		{"redis", "/redis/login", "127.0.2"},
	} {
		url := url(store.path)
		for _, a := range []struct {
			name, from, query, results string
			args                       []string
		}{
			// 30 tries, each reading the status line, then resetting the
			// connection (SO_LINGER 0): the backend sends a 401 with 64 KiB
			// of body at once and holds the rest 10 s, so the proxy is
			// mid-body when the RST comes.
			{"reset", ".1", "?hold=10s&pad=65536", "401|429", []string{"-mode", "reset", "-n", "30"}},
			// The same after the headers and the body's first byte.
			{"midbody", ".2", "?hold=10s&pad=65536", "401|429", []string{"-mode", "midbody", "-n", "30"}},
			// 30 h2c streams of one connection, each reset as its HEADERS come.
			{"h2reset", ".3", "?hold=10s&pad=65536", "401|429", []string{"-mode", "h2reset", "-n", "30"}},
			// 20 guesses given up after 300 ms, while a wrong password is
			// answered after 500 ms and the right one, the 20th, at once
			// (Traefik's 499, client closed request).
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
				lines, stderr := Run(t, attack, time.Minute, args...)
				got := be.Count(t, from)
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
					t.Errorf("%s: the attack did not run as meant: %s; %s", sent, Tally(lines), stderr)
				case got < 1:
					t.Errorf("%s: the backend got %d attempts, want 1..%d: is the route right?", sent, got, AttackLimit)
				case a.name != "tarpit" && got != seen:
					t.Errorf("%s: the backend got %d attempts, the client saw %d x 401", sent, got, seen)
				case got > AttackLimit:
					t.Errorf("%s: the backend got %d login attempts within the window, limit %d; the client saw %s", sent, got, AttackLimit, Tally(lines))
				default:
					t.Logf("%s: the backend got %d, limit %d; the client saw %s", sent, got, AttackLimit, Tally(lines))
				}
			})
		}
		t.Run(store.name+"/sequence", func(t *testing.T) {
			from := store.net + ".7"
			args := []string{"-mode", "sequence", "-right", "12", "-n", "7", "-from", from, "-url", url}
			lines, stderr := Run(t, attack, time.Minute, args...)
			want := strings.Repeat("200 ", 12) + strings.Repeat("401 ", 5) + "429 429"
			if got, n := strings.Join(lines, " "), be.Count(t, from); got != want || n != 17 {
				t.Errorf("attack %s (12 logins with the password, then 7 wrong): %q, want %q; the backend got %d, want 17; %s",
					strings.Join(args, " "), got, want, n, stderr)
			}
		})
	}
}
