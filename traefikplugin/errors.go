package traefikplugin

import (
	"errors"
	"strconv"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// fieldError returns the error of a bad setting, named as in the dynamic
// configuration.
func fieldError(field, msg string) error {
	return errors.New(field + ": " + msg)
}

// quoteValue returns a bad value as a Go string literal for an error
// message, cut to a readable length.
func quoteValue(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// spelling names the fields of the core's errors as the dynamic
// configuration does.
var spelling = &ratelimit.Spelling{
	ratelimit.FieldWindow:    "window",
	ratelimit.FieldSubWindow: "subWindow",
	ratelimit.FieldLimit:     "limit",
	ratelimit.FieldCost:      "cost",
	ratelimit.FieldAlgorithm: "algorithm",
	ratelimit.FieldMaxKeys:   "maxKeys",
	// The plugin has no such setting and always passes the default; the
	// spelling is there so that no error can name a field another way.
	ratelimit.FieldSweepInterval: "sweepInterval",
	ratelimit.FieldName:          "middleware name",
	ratelimit.FieldBan:           "ban",
	redisstore.FieldKeyPrefix:    "redis.keyPrefix",
	redisstore.FieldDB:           "redis.db",
	redisstore.FieldPoolSize:     "redis.poolSize",
	redisstore.FieldTLS:          "redis.tls",
	redisstore.FieldLease:        "redis.lease",
	guard.FieldOnStoreError:      "onStoreError",
}
