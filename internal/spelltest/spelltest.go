// Package spelltest checks that a host spells the fields of the core's
// errors its own way: a Traefik user never reads a Caddyfile name, nor a
// Caddy user a name of Traefik's dynamic configuration.
package spelltest

import (
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// Fields are the fields the shared packages' errors can name.
var Fields = []ratelimit.Field{
	ratelimit.FieldWindow, ratelimit.FieldSubWindow, ratelimit.FieldLimit, ratelimit.FieldCost,
	ratelimit.FieldAlgorithm, ratelimit.FieldMaxKeys, ratelimit.FieldSweepInterval, ratelimit.FieldName,
	redisstore.FieldKeyPrefix, redisstore.FieldDB, redisstore.FieldPoolSize, redisstore.FieldTLS,
	redisstore.FieldLease, guard.FieldOnStoreError,
}

// Caddy are the Caddyfile's names of the settings the core checks, where
// Traefik spells them otherwise.
var Caddy = []string{"on_store_error", "sub_window", "max_keys", "sweep_interval", "zone name", "key_prefix", "pool_size"}

// Traefik are the dynamic configuration's names of the settings the core
// checks, where the Caddyfile spells them otherwise, and the core's own
// Go names, which no host should show.
var Traefik = []string{"onStoreError", "OnError", "subWindow", "SubWindow", "maxKeys", "MaxKeys", "sweepInterval", "SweepInterval", "middleware name", "keyPrefix", "KeyPrefix", "poolSize", "PoolSize"}

// Find returns the first of spellings that msg holds, or "".
func Find(msg string, spellings []string) string {
	for _, s := range spellings {
		if strings.Contains(msg, s) {
			return s
		}
	}
	return ""
}

// Check checks a host's spelling of every field the core can name: s
// gives one, holding none of foreign, and puts it before the message of
// the core's errors.
func Check(t testing.TB, s *ratelimit.Spelling, foreign []string) {
	t.Helper()
	for _, f := range Fields {
		n := s.Name(f)
		if (*s)[f] == "" || n == string(f) || Find(n, foreign) != "" {
			t.Errorf("field %v is spelled %q", f, n)
		}
		err := s.Error(&ratelimit.FieldError{Field: f, Msg: "bad value"})
		if got, want := err.Error(), n+": bad value"; got != want {
			t.Errorf("field %v: error %q, want %q", f, got, want)
		}
	}
}
