// Package e2e holds the end-to-end tests of the Traefik plugin: each test
// starts a real Traefik v3.6.12 with this checkout's plugin as a local
// plugin (internal/traefiktest), on a dynamic configuration rendered from
// a fixture under fixtures/<feature>/ with free loopback ports, and drives
// it over HTTP, as a user would. One file per feature; a failure says
// what was sent and what came back, and prints Traefik's log.
//
//	go test -count=1 ./traefikplugin/e2e
//	go test -count=1 -run TestE2EReload -v ./traefikplugin/e2e
//
// Traefik is built once by scripts/lib/traefik.sh (see
// internal/traefiktest.Binary); without it the tests fail saying how to
// build it, or skip with WL_TRAEFIK_SKIP=1. Like caddymodule/e2e they do
// not build under -race (the unit run of scripts/test.sh); its "end to
// end: Traefik" step runs them without it.
//
// The package sits beside the plugin it tests, as caddymodule/e2e does
// beside the Caddy module; internal/traefiktest leaves it out of the
// plugin it lays out for Traefik.
package e2e
