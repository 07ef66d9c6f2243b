package caddymodule

import (
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// badMark ends the line of a test Caddyfile whose value is bad: a comment
// to Caddy, the line the error must name to the test.
const badMark = " # bad"

// markedLine returns the 1-based line of input that ends with badMark.
func markedLine(t *testing.T, input string) int {
	t.Helper()
	line := 0
	for i, l := range strings.Split(input, "\n") {
		if strings.HasSuffix(l, badMark) {
			if line != 0 {
				t.Fatalf("two lines marked bad in\n%s", input)
			}
			line = i + 1
		}
	}
	if line == 0 {
		t.Fatalf("no line marked bad in\n%s", input)
	}
	return line
}

// checkErrorLine checks that err contains want and names the file's line.
func checkErrorLine(t *testing.T, input string, err error, want, file string, line int) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q at %s:%d in\n%s", want, file, line, input)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	if at := ", at " + file + ":" + strconv.Itoa(line); !strings.HasSuffix(err.Error(), at) {
		t.Errorf("error %q does not end with %q (the bad value's line) in\n%s", err, at, input)
	}
}

// checkZoneNamed checks that err, an error inside zone "a", names the
// zone once.
func checkZoneNamed(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if n := strings.Count(err.Error(), `zone "a": `); n != 1 {
		t.Errorf("error %q names zone \"a\" %d times, want once", err, n)
	}
}

// lines joins the lines of a block body, each indented by indent.
func lines(indent string, body []string) string {
	var b strings.Builder
	for _, l := range body {
		b.WriteString(indent + l + "\n")
	}
	return b.String()
}

// A bad value inside a zone is reported at its own line, not the zone's,
// whether it is found as the line is read or once the zone is complete
// (a value that only another setting makes bad), and the error names the
// zone, once. Each case marks the bad line; the directive is parsed alone
// and in a site of a Caddyfile, as `caddy adapt` and `caddy run` do.
func TestZoneErrorLine(t *testing.T) {
	tests := []struct {
		name string
		body []string // the zone's lines; the bad one ends with badMark
		want string   // a part of the error
	}{
		{"key empty", []string{"window 1m", "limit 5", `key ""` + badMark}, "key must not be empty"},
		{"key two values", []string{"window 1m", "limit 5", "key {remote_host} {path}" + badMark}, "wrong argument count"},
		{"key duplicate", []string{"key a", "window 1m", "key b" + badMark, "limit 5"}, "duplicate key"},
		{"window typo", []string{"window 15mn" + badMark, "limit 5"}, `zone "a": window: want a positive duration such as 1m or 30s, got "15mn"`},
		{"window unit", []string{"window 10x" + badMark, "limit 5"}, `window: want a positive duration such as 1m or 30s, got "10x"`},
		{"window too long", []string{"limit 5", "window 4000d" + badMark}, "window: 96000h0m0s is too long"},
		{"window without sub-windows", []string{"limit 5", "window 7ns" + badMark}, "sub_window: required: the window 7ns cannot be split"},
		{"sub_window not dividing", []string{"window 1m", "sub_window 7s" + badMark, "limit 5"}, "sub_window: 7s does not divide the window 1m0s"},
		{"sub_window longer", []string{"sub_window 2m" + badMark, "window 1m", "limit 5"}, "sub_window: 2m0s is longer than the window 1m0s"},
		{"sub_window too fine", []string{"window 1m", "limit 5", "sub_window 100ms" + badMark}, "sub_window: 100ms splits the window 1m0s into 600"},
		{"sub_window with log", []string{"window 1m", "sub_window 6s" + badMark, "limit 5", "algorithm log"}, "sub_window: does not apply to the log algorithm"},
		{"sub_window with fixed", []string{"window 1m", "limit 5", "algorithm fixed", "sub_window 6s" + badMark}, "sub_window: does not apply to the fixed algorithm"},
		{"limit zero", []string{"window 1m", "limit 0" + badMark}, `limit: want a positive integer or a placeholder, got "0"`},
		{"events word", []string{"window 1m", "events many" + badMark}, `events: want a positive integer or a placeholder, got "many"`},
		{"limit too large", []string{"window 1m", "limit 9999999999" + badMark}, "limit: 9999999999 is too large"},
		{"limit too large for log", []string{"window 1m", "limit 5000" + badMark, "algorithm log"}, "limit: 5000 is too large for the log algorithm"},
		{"events too large for log", []string{"algorithm log", "window 1m", "events 5000" + badMark}, "limit: 5000 is too large for the log algorithm"},
		{"limit placeholder", []string{"window 1m", "limit {a}{b}" + badMark}, `limit: want one placeholder such as {plan_limit}, got "{a}{b}"`},
		{"limit fallback", []string{"window 1m", "limit {plan} none" + badMark}, `limit: the fallback limit must be a positive integer, got "none"`},
		{"limit and events", []string{"window 1m", "limit 5", "events 5" + badMark}, "limit and events are the same setting"},
		{"algorithm", []string{"window 1m", "limit 5", "algorithm slidng" + badMark}, `unknown algorithm "slidng" (want sliding, strict, fixed or log)`},
		{"algorithm before the rest", []string{"algorithm leaky" + badMark, "window 1m", "limit 5"}, `unknown algorithm "leaky"`},
		{"cost zero", []string{"window 1m", "limit 5", "cost 0" + badMark}, `cost: want a positive integer, got "0"`},
		{"cost above limit", []string{"window 1m", "cost 6" + badMark, "limit 5"}, "cost: 6 exceeds the limit 5"},
		{"ipv4_prefix", []string{"window 1m", "limit 5", "ipv4_prefix 33" + badMark}, `ipv4_prefix: want a prefix length from 0 to 32, got "33"`},
		{"ipv6_prefix", []string{"window 1m", "limit 5", "ipv6_prefix 0" + badMark}, `ipv6_prefix: want a prefix length from 1 to 128, got "0"`},
		{"count_status typo", []string{"window 1m", "limit 5", "count_status 4011" + badMark}, `zone "a": count_status: "4011" is neither a status code`},
		{"count_status", []string{"window 1m", "limit 5", "count_status 401 700" + badMark}, `count_status: "700" is neither a status code`},
		{"override limit word", []string{"window 1m", "limit 5", "override x unlimted" + badMark}, `zone "a": override limit "unlimted" must be a positive integer or unlimited`},
		{"override one argument", []string{"window 1m", "limit 5", "override x" + badMark}, "override: want <key or CIDR> <limit>|unlimited, got 1 arguments"},
		{"override bad CIDR", []string{"window 1m", "override 10.0.0.0/8 10", "override 10.0.0.0/33 10" + badMark, "limit 5"}, "override 10.0.0.0/33: bad CIDR"},
		{"override given twice", []string{"window 1m", "limit 5", "override gold 10", "override 10.0.0.0/8 10", "override gold unlimited" + badMark}, "override gold: given twice"},
		{"override too large for log", []string{"window 1m", "limit 5", "override gold 2000" + badMark, "algorithm log"}, "override gold: limit 2000 is too large for the log algorithm"},
		{"override below cost", []string{"window 1m", "limit 5", "override gold 1" + badMark, "cost 2"}, "override gold: limit 1 is below the cost 2"},
		{"match", []string{"window 1m", "limit 5", "match {", "\tbogus x" + badMark, "}"}, "getting matcher module 'bogus'"},
		{"unknown subdirective", []string{"window 1m", "limit 5", "rate 5r/s" + badMark}, `zone "a": unknown subdirective "rate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zone := "zone a {\n" + lines("\t", tt.body) + "}"

			directive := "rate_limit {\n" + lines("\t", strings.Split(zone, "\n")) + "}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(directive))
			checkErrorLine(t, directive, err, tt.want, "Testfile", markedLine(t, directive))
			checkZoneNamed(t, err)

			site := ":8080 {\n\trate_limit {\n" + lines("\t\t", strings.Split(zone, "\n")) + "\t}\n\trespond ok\n}\n"
			_, _, err = caddyconfig.GetAdapter("caddyfile").Adapt([]byte(site), map[string]any{"filename": "Caddyfile"})
			checkErrorLine(t, site, err, tt.want, "Caddyfile", markedLine(t, site))
			checkZoneNamed(t, err)
		})
	}
}

// A bad value inside store redis is reported at its own line, not the
// store's nor the block's end, in a site's directive and in the global
// option alike.
func TestRedisErrorLine(t *testing.T) {
	tests := []struct {
		name string
		body []string // the store block's lines; the bad one ends with badMark
		want string
	}{
		{"address two values", []string{"address a:1 b:1" + badMark}, "wrong argument count"},
		{"address and url", []string{"address a:1", "db 1", "url redis://b:1" + badMark}, "store redis: set one of address, url, addresses (cluster) and sentinel"},
		{"addresses and sentinel", []string{"addresses a:1 b:1", "sentinel m s:1" + badMark}, "store redis: set one of address, url, addresses (cluster) and sentinel"},
		{"addresses empty", []string{"addresses" + badMark}, "wrong argument count"},
		{"sentinel short", []string{"sentinel mymaster" + badMark}, "sentinel: want a master name and at least one sentinel address"},
		{"sentinel_username without sentinel", []string{"address a:1", "sentinel_username u" + badMark}, "store redis: sentinel_username and sentinel_password apply only with sentinel"},
		{"sentinel_password without sentinel", []string{"sentinel_password p" + badMark, "address a:1"}, "store redis: sentinel_username and sentinel_password apply only with sentinel"},
		{"username two values", []string{"username a b" + badMark}, "wrong argument count"},
		{"password missing", []string{"password" + badMark}, "wrong argument count"},
		{"db word", []string{"address a:1", "db one" + badMark}, `db: want a database number of at least 0, got "one"`},
		{"db with cluster", []string{"addresses a:1 b:1", "db 1" + badMark, "pool_size 5"}, "store redis: db: a Redis Cluster has only db 0, got 1"},
		{"db before cluster", []string{"db 2" + badMark, "addresses a:1 b:1"}, "store redis: db: a Redis Cluster has only db 0, got 2"},
		{"dial_timeout", []string{"address a:1", "dial_timeout 1ns" + badMark, "timeout 1s"}, "store redis: dial_timeout: 1ns is too short (at least 1ms)"},
		{"dial_timeout word", []string{"dial_timeout soon" + badMark}, `dial_timeout: want a positive duration such as 1m or 30s, got "soon"`},
		{"timeout", []string{"address a:1", "timeout 0.5ms" + badMark, "db 1"}, "store redis: timeout: 500µs is too short (at least 1ms)"},
		{"pool_size", []string{"pool_size 0" + badMark}, `pool_size: want a positive integer, got "0"`},
		{"pool_size huge", []string{"pool_size 99999999" + badMark}, "pool_size: 99999999 is too large"},
		{"key_prefix braces", []string{"address a:1", "key_prefix {x}" + badMark, "db 1"}, `store redis: key_prefix: "{x}" must not contain braces`},
		{"lease value", []string{"address a:1", "lease on" + badMark, "db 1"}, `store redis: lease: want auto or off, got "on"`},
		{"lease two values", []string{"lease auto off" + badMark}, "wrong argument count"},
		{"lease after its block's settings", []string{"tls {", "\tca ca.pem", "}", "key_prefix rl:", "lease dynamic" + badMark}, `store redis: lease: want auto or off, got "dynamic"`},
		{"tls argument", []string{"tls on" + badMark}, "wrong argument count"},
		{"tls cert alone", []string{"address a:1", "tls {", "\tca ca.pem", "\tcert c.pem" + badMark, "}"}, "store redis: tls: cert and key must be given together"},
		{"tls key alone", []string{"tls {", "\tkey k.pem" + badMark, "\tserver_name r", "}", "address a:1"}, "store redis: tls: cert and key must be given together"},
		{"tls unknown", []string{"tls {", "\tverify no" + badMark, "}"}, `tls: unknown subdirective "verify"`},
		{"unknown subdirective", []string{"host a" + badMark}, `store redis: unknown subdirective "host"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := "store redis {\n" + lines("\t", tt.body) + "}"

			directive := "rate_limit {\n" + zoneA + lines("\t", strings.Split(store, "\n")) + "}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(directive))
			checkErrorLine(t, directive, err, tt.want, "Testfile", markedLine(t, directive))

			global := "{\n\trate_limit {\n" + lines("\t\t", strings.Split(store, "\n")) + "\t}\n}\n" +
				":8080 {\n\trate_limit {\n" + lines("\t", strings.Split(zoneA, "\n")) + "\t}\n\trespond ok\n}\n"
			_, _, err = caddyconfig.GetAdapter("caddyfile").Adapt([]byte(global), map[string]any{"filename": "Caddyfile"})
			checkErrorLine(t, global, err, tt.want, "Caddyfile", markedLine(t, global))
		})
	}
}
