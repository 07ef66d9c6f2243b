package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// The global option's effect on each site is held by
// testdata/global.caddyfile (TestAdaptGolden); these are its errors.
func TestGlobalOptionErrors(t *testing.T) {
	site := `
:8080 {
	rate_limit {
		zone api {
			key {remote_host}
			window 1m
			limit 10
		}
		%s
	}
}`
	for _, tc := range []struct {
		global, site, want string
	}{
		{"rate_limit {\n\t\tzone api\n\t}", "", `unknown subdirective "zone"`},
		{"rate_limit {\n\t\ton_store_error deny\n\t}", "", "on_store_error applies only to the Redis store"},
		{"rate_limit {\n\t\ton_store_error maybe\n\t}", "", "on_store_error"},
		{"rate_limit {\n\t\tstore redis\n\t\tstore memory\n\t}", "", "duplicate store"},
		{"rate_limit {\n\t\tstore redis {\n\t\t\tdb x\n\t\t}\n\t}", "", "db: want a database number"},
		{"rate_limit {\n\t\tstore redis {\n\t\t\ttimeout 1ns\n\t\t}\n\t}", "", "timeout: 1ns is too short (at least 1ms)"},
		{"rate_limit extra", "", "wrong argument count"},
		// A site that opts out of the global store cannot keep a policy.
		{"rate_limit {\n\t\tstore redis\n\t}", "store memory\n\t\ton_store_error deny", "on_store_error applies only"},
		// Without a global store, a site's policy still needs a store.
		{"", "on_store_error deny", "on_store_error applies only"},
	} {
		input := "{\n\t" + tc.global + "\n}\n" + strings.Replace(site, "%s", tc.site, 1)
		_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("global %q, site %q: error %v, want one containing %q", tc.global, tc.site, err, tc.want)
		}
	}
}

// A site's policy with the global store is its own.
func TestGlobalOptionSitePolicy(t *testing.T) {
	var h Handler
	g := &globalDefaults{redis: &RedisConfig{Address: "r:6379"}, onStoreError: "local"}
	h.OnStoreError = "deny"
	g.applyTo(&h)
	if h.Redis == nil || h.Redis.Address != "r:6379" || h.OnStoreError != "deny" {
		t.Fatalf("got %+v %q", h.Redis, h.OnStoreError)
	}
	// The handler's copy is its own: provisioning one site does not
	// change another's config.
	h.Redis.Address = "changed:6379"
	if g.redis.Address != "r:6379" {
		t.Fatal("the global config was shared, not copied")
	}
}
