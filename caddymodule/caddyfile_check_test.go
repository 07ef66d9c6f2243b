package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// adaptCaddyfile adapts input as `caddy adapt` does, the file named
// Caddyfile.
func adaptCaddyfile(input string) error {
	_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), map[string]any{"filename": "Caddyfile"})
	return err
}

// site wraps the lines of a rate_limit block in a site.
func site(body ...string) string {
	return ":8080 {\n\trate_limit {\n" + lines("\t\t", body) + "\t}\n\trespond ok\n}\n"
}

// A misspelled subdirective, at every level, is answered with the one
// meant; one written in the wrong block, with the block it belongs in;
// and every error is at the misspelled line.
func TestUnknownSubdirectiveSaysWhichOne(t *testing.T) {
	tests := []struct {
		name, caddyfile, want string
	}{
		{"zone", site("zone api {", "\twindow 1m", "\tlimt 5"+badMark, "}"),
			`zone "api": unknown subdirective "limt" (did you mean "limit"?)`},
		{"zone, another case", site("zone api {", "\tWindow 1m"+badMark, "\tlimit 5", "}"),
			`zone "api": unknown subdirective "Window" (did you mean "window"?)`},
		{"zone, a letter swapped", site("zone api {", "\twindow 1m", "\tlimit 5", "\tsub_widnow 6s"+badMark, "}"),
			`zone "api": unknown subdirective "sub_widnow" (did you mean "sub_window"?)`},
		{"zone, a matcher", site("zone api {", "\twindow 1m", "\tlimit 5", "\tpath /api/*"+badMark, "}"),
			`zone "api": unknown subdirective "path" (path is a request matcher: put it inside match { ... })`},
		{"zone, a handler setting", site("zone api {", "\twindow 1m", "\tlimit 5", "\theaders both"+badMark, "}"),
			`zone "api": unknown subdirective "headers" (headers applies to the whole rate_limit block: put it beside the zones, not in one)`},
		{"zone, nothing near", site("zone api {", "\twindow 1m", "\tlimit 5", "\tburst 10"+badMark, "}"),
			`zone "api": unknown subdirective "burst" (want one of key, window, sub_window, limit, events, override, algorithm, cost, ipv4_prefix, ipv6_prefix, count_status, match, in_flight, in_flight_ttl, ban)`},
		{"handler", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "heders both"+badMark),
			`unknown subdirective "heders" (did you mean "headers"?)`},
		{"handler, plural", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "max_key 10"+badMark),
			`unknown subdirective "max_key" (did you mean "max_keys"?)`},
		{"handler, a zone setting", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "algorithm strict"+badMark),
			`unknown subdirective "algorithm" (algorithm is a zone's setting: put it inside zone <name> { ... })`},
		{"handler, a Redis setting", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "address 10.0.0.5:6379"+badMark),
			`unknown subdirective "address" (address is a Redis setting: put it inside store redis { ... })`},
		{"store redis", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "store redis {", "\tadress 10.0.0.5:6379"+badMark, "}"),
			`store redis: unknown subdirective "adress" (did you mean "address"?)`},
		{"store redis, password", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "store redis {", "\tpasword {env.P}"+badMark, "}"),
			`store redis: unknown subdirective "pasword" (did you mean "password"?)`},
		{"store redis tls", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "store redis {", "\ttls {", "\t\tservername r"+badMark, "\t}", "}"),
			`tls: unknown subdirective "servername" (did you mean "server_name"?)`},
		{"persist", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "persist {", "\tintervall 30s"+badMark, "}"),
			`persist: unknown subdirective "intervall" (did you mean "interval"?)`},
		{"persist, nothing near", site("zone api {", "\twindow 1m", "\tlimit 5", "}", "persist {", "\tdir /var/lib/rl"+badMark, "}"),
			`persist: unknown subdirective "dir" (want one of directory, interval)`},
		{"global option", "{\n\trate_limit {\n\t\tstor redis" + badMark + "\n\t}\n}\n" + site("zone api {", "\twindow 1m", "\tlimit 5", "}"),
			`rate_limit global option: unknown subdirective "stor" (did you mean "store"?)`},
		{"global option, a zone", "{\n\trate_limit {\n\t\tzone api" + badMark + "\n\t}\n}\n" + site("zone api {", "\twindow 1m", "\tlimit 5", "}"),
			`rate_limit global option: unknown subdirective "zone" (only store and on_store_error are set here; zones belong in each site's rate_limit)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrorLine(t, tt.caddyfile, adaptCaddyfile(tt.caddyfile), tt.want, "Caddyfile", markedLine(t, tt.caddyfile))
		})
	}
}

// What cannot run is refused by `caddy adapt`, not first by `caddy run`:
// each at the line of a setting to change, with the fix.
func TestAdaptRefusesWhatCannotRun(t *testing.T) {
	api := []string{"zone api {", "\twindow 1m", "\tlimit 5", "}"}
	with := func(more ...string) []string { return append(append([]string(nil), api...), more...) }
	global := "{\n\trate_limit {\n\t\tstore redis 10.0.0.5:6379\n\t}\n}\n"
	tests := []struct {
		name, caddyfile, want string
	}{
		{"persist with store redis", site(with("store redis 10.0.0.5:6379", "persist {"+badMark, "\tinterval 30s", "}")...),
			"persist: Redis keeps the counts of this rate_limit's zones (it persists them by its own configuration), so there is nothing to save: " +
				"remove persist; or use two rate_limit blocks, one with store redis and one without (the zones to count in memory and save); " +
				"or add on_store_error local, to save the memory zones that decide while Redis fails"},
		{"persist before store redis", site(append([]string{"persist {" + badMark, "\tdirectory /var/lib/rl", "}", "store redis", "on_store_error deny"}, api...)...),
			"or use two rate_limit blocks, one with store redis and one without"},
		{"persist with the global store redis", global + site(with("persist {"+badMark, "\tinterval 30s", "}")...),
			"this rate_limit takes store redis from the global rate_limit option: add store memory here to count its zones in memory and save them, or remove persist, or add on_store_error local"},
		{"address without a port", site(with("store redis {", "\taddress 10.0.0.5"+badMark, "}")...),
			`store redis: address: "10.0.0.5" has no port: write 10.0.0.5:6379`},
		{"address without a port on the store's line", site(with("store redis redis.internal" + badMark)...),
			`store redis: address: "redis.internal" has no port: write redis.internal:6379`},
		{"address without a port in the global option", "{\n\trate_limit {\n\t\tstore redis 10.0.0.5" + badMark + "\n\t}\n}\n" + site(api...),
			`store redis: address: "10.0.0.5" has no port: write 10.0.0.5:6379`},
		{"on_store_error without redis", site(with("on_store_error local"+badMark, "headers both")...),
			"on_store_error applies only to the Redis store: add store redis { ... } or remove it"},
		{"window not in microseconds, in Redis", site("zone api {", "\twindow 1000001ns"+badMark, "\tsub_window 1000001ns", "\tlimit 5", "}", "store redis"),
			`store redis: zone "api": window: 1.000001ms must be whole microseconds to be kept in redis (or count this zone in memory: a rate_limit block without store redis)`},
		{"zone name with braces, in Redis", site("zone a{b} {"+badMark, "\twindow 1m", "\tlimit 5", "}", "store redis"),
			`store redis: zone "a{b}": zone name: "a{b}" must not have braces to be kept in redis`},
		{"sweep_interval too short", site(with("sweep_interval 10ms" + badMark)...),
			"sweep_interval: 10ms is too short (at least 100ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrorLine(t, tt.caddyfile, adaptCaddyfile(tt.caddyfile), tt.want, "Caddyfile", markedLine(t, tt.caddyfile))
		})
	}
	// What may run together is accepted.
	for name, ok := range map[string]string{
		"persist off with store redis":             site(with("store redis 10.0.0.5:6379", "persist off")...),
		"persist with on_store_error local":        site(with("store redis 10.0.0.5:6379", "on_store_error local", "persist {", "\tinterval 30s", "}")...),
		"persist with store memory and global":     global + site(with("store memory", "persist {", "\tinterval 30s", "}")...),
		"global local policy and persist":          "{\n\trate_limit {\n\t\tstore redis 10.0.0.5:6379\n\t\ton_store_error local\n\t}\n}\n" + site(with("persist {", "\tinterval 30s", "}")...),
		"placeholder address":                      site(with("store redis {env.REDIS_ADDR}")...),
		"window in microseconds, in Redis":         site("zone api {", "\twindow 1000001us", "\tsub_window 1000001us", "\tlimit 5", "}", "store redis"),
		"zone name with braces, in memory":         site("zone a{b} {", "\twindow 1m", "\tlimit 5", "}"),
		"a Redis zone and a memory zone, 2 blocks": ":8080 {\n\trate_limit {\n" + lines("\t\t", with("store redis 10.0.0.5:6379")) + "\t}\n\trate_limit {\n" + lines("\t\t", []string{"zone login {", "\twindow 15m", "\tlimit 5", "}", "persist {", "\tinterval 30s", "}"}) + "\t}\n\trespond ok\n}\n",
	} {
		if err := adaptCaddyfile(ok); err != nil {
			t.Errorf("%s: %v in\n%s", name, err, ok)
		}
	}
}
