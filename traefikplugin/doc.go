// Package traefikplugin is windowlimit's Traefik middleware plugin: a
// sliding-window rate limiter that Traefik v3 loads from source with its
// yaegi interpreter.
//
// Traefik calls CreateConfig, decodes the middleware's dynamic
// configuration into the result (weakly typed: labels give every value as
// a string; a key that matches no field lands in its block's Unknown, and
// New refuses it), then calls New once per router and again on every
// reload of the dynamic configuration. Limiter state lives in a
// package-level registry keyed by the middleware's name, so counts survive
// reloads.
//
// The plugin's log lines go to Traefik's own log, at DEBUG or ERROR (see
// debugLog and errorLog).
//
// Only the standard library and this module are imported.
package traefikplugin
