// Package e2e holds the end-to-end tests of the Caddy module: each test
// starts Caddy with this checkout's module on free loopback ports and
// drives it over HTTP, as a user would.
//
// Caddy runs as the test binary itself, re-executed as `caddy run` (see
// TestMain): the test binary links Caddy's standard modules and ours, as
// the binary ./xcaddy.sh builds does, and a process of its own per
// instance lets a test stop, kill and restart Caddy and read its log.
//
//	go test -count=1 ./caddymodule/e2e
//	go test -count=1 -run TestE2EReload ./caddymodule/e2e
//
// The tests do not build under -race (the unit run of scripts/test.sh);
// its "end to end: Caddy" step runs them without it.
package e2e
