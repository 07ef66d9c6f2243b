// Package e2etest holds what the end-to-end tests of both hosts share
// (caddymodule/e2e and traefikplugin/e2e): free loopback ports, requests
// that say what was sent and what came back, polling waits instead of
// sleeps, the commands of scripts/e2e, and the checks that run the same
// against Caddy and Traefik.
//
// A test sends with Get, Do or Send, each request on a connection of its
// own (From picks the loopback address it comes from); Try and
// GetRequest poll until every Condition (StatusIs, BodyContains,
// HeaderIs) holds, Until and WaitFor until a function does, and their
// errors name what failed last.
//
// StartBackend runs scripts/e2e/backend, the upstream that answers the
// status X-Status names, serves the login and counts the attempts that
// reached it; StartSlowBackend one that holds requests and counts how
// many it holds at once. Program builds the other commands of
// scripts/e2e (attack, burst) once and caches them in CacheDir, and Run
// runs one.
//
// The checks the two hosts share take the URLs to send to, and what only
// the host can do (kill Redis, reset a key), as arguments:
// CountStatusAttacks, ResetCountStatus, WarmUp and BurstAfterReset,
// LeasesGiveBack, ChaosLoad, SharedAgain and AdmitsAgain, SlotBurst.
package e2etest
