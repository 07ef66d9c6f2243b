package caddymodule

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

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
	ratelimit.FieldBan:           "ban",
	redisstore.FieldKeyPrefix:    "key_prefix",
	redisstore.FieldDB:           "db",
	redisstore.FieldPoolSize:     "pool_size",
	redisstore.FieldTLS:          "tls",
	redisstore.FieldLease:        "lease",
	guard.FieldOnStoreError:      "on_store_error",
}
