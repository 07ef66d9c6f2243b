package caddymodule

import "github.com/windowlimit/windowlimit/shared/ratelimit"

// spelling names the fields of the core's errors as the Caddyfile and
// the JSON config do.
var spelling = &ratelimit.Spelling{
	ratelimit.FieldWindow:        "window",
	ratelimit.FieldSubWindow:     "sub_window",
	ratelimit.FieldLimit:         "limit",
	ratelimit.FieldCost:          "cost",
	ratelimit.FieldAlgorithm:     "algorithm",
	ratelimit.FieldMaxKeys:       "max_keys",
	ratelimit.FieldSweepInterval: "sweep_interval",
	ratelimit.FieldName:          "zone name",
	ratelimit.FieldKeyPrefix:     "key_prefix",
	ratelimit.FieldDB:            "db",
	ratelimit.FieldPoolSize:      "pool_size",
	ratelimit.FieldTLS:           "tls",
	ratelimit.FieldOnStoreError:  "on_store_error",
}
