package caddymodule

import "github.com/windowlimit/windowlimit/shared/ratelimit"

// fieldNames spells the fields of the core's errors as the Caddyfile and
// the JSON config do.
var fieldNames = [ratelimit.NumFields]string{
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

// fieldName returns the Caddyfile spelling of f.
func fieldName(f ratelimit.Field) string {
	if int(f) < len(fieldNames) && fieldNames[f] != "" {
		return fieldNames[f]
	}
	return f.String()
}

// coreError spells the field of a *ratelimit.FieldError as the Caddyfile
// does; other errors are returned unchanged.
func coreError(err error) error {
	return ratelimit.SpellField(err, fieldName)
}
