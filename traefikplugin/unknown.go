package traefikplugin

import (
	"errors"
	"github.com/windowlimit/windowlimit/shared/optname"
	"sort"
	"strings"
)

// The options of each block, as the configuration spells them: decode.go
// decodes these, and refuses any other, naming what it could have been.
var (
	topOptions = []string{"window", "subWindow", "limit", "algorithm", "cost", "sourceCriterion",
		"headers", "maxKeys", "dryRun", "logKey", "statusCode", "message", "redis", "countStatus",
		"overrides", "onStoreError", "persist", "inFlight", "inFlightTTL",
		"ban"}
	sourceOptions     = []string{"ipStrategy", "requestHeaderName", "requestHost"}
	ipStrategyOptions = []string{"depth", "excludedIPs", "ipv6Subnet"}
	redisOptions      = []string{"endpoints", "username", "password", "db", "tls", "dialTimeout",
		"readTimeout", "writeTimeout", "poolSize", "maxActiveConns", "minIdleConns", "keyPrefix", "lease"}
	redisTLSOptions = []string{"ca", "cert", "key", "insecureSkipVerify"}
)

// rateLimitHints answers the options of Traefik's built-in rateLimit
// that have another name here, or none: users who switch bring them.
var rateLimitHints = map[string]string{
	"average": "did you mean limit? (rateLimit's average per period is limit per window here)",
	"period":  "did you mean window? (rateLimit's period is window here)",
	"burst": "windowlimit has no burst: a window admits up to limit anywhere in it; to bound short bursts, " +
		"add a second windowlimit middleware with a short window",
}

// unknownOption returns the error of the keys of unknown, the options of
// the block at path that match none of known, or nil when there are
// none. The first key in sorted order is named with a suggestion; the
// others are listed after it, so that one load reports them all.
func unknownOption(path string, unknown map[string]any, known []string) error {
	if len(unknown) == 0 {
		return nil
	}
	keys := make([]string, 0, len(unknown))
	for k := range unknown {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	k := keys[0]
	msg := "unknown option " + path + k
	switch same, near := optname.Nearest(k, known); {
	case same != "":
		// Traefik's decoder matches keys in any case and took one
		// spelling; this one is a second value for the same option.
		msg = "option " + path + k + " is given twice, also as " + path + same + " (Traefik matches option names in any case): keep one"
	case near != "":
		msg += "; did you mean " + near + "?"
	case rateLimitHints[strings.ToLower(k)] != "" && path == "":
		msg += "; " + rateLimitHints[strings.ToLower(k)]
	default:
		msg += " (known options: " + strings.Join(known, ", ") + ")"
	}
	if len(keys) > 1 {
		msg += "; also unknown: " + path + strings.Join(keys[1:], ", "+path)
	}
	return errors.New(msg)
}
