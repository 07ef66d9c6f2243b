package traefikplugin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// defaultMessage is the body of a rejection when Config.Message is empty.
const defaultMessage = "Too Many Requests"

// settings is a validated Config, with defaults filled in.
type settings struct {
	rule    ratelimit.Rule
	maxKeys int
	// source is nil for the remote address, which the middleware reads
	// inline, with IPv6 grouped by v6Bits.
	source  *keySource
	v6Bits  int
	mode    httplimit.HeaderMode
	dryRun  bool
	logKey  bool
	status  int
	message string
	// redis is nil for the in-memory store.
	redis *redisSettings
	// countStatus is nil when every request counts.
	countStatus *httplimit.StatusSet
	// overrides is nil when no key has a limit of its own.
	overrides *ratelimit.Overrides
	// persist is nil when the zone is not saved to disk.
	persist *persistSettings
	// ban is how long a key that reaches its limit is refused; 0: never.
	ban time.Duration
}

// validate checks every value of c and returns the settings, or an error
// naming the first bad field. It does not modify c, which Traefik shares
// between the routers that use the middleware.
func (c *Config) validate() (settings, error) {
	var s settings
	if c == nil {
		return s, fieldError("config", "missing")
	}
	var err error
	if s.ban, err = c.banSetting(); err != nil {
		return s, err
	}
	if c.Window == "" {
		return s, fieldError("window", `required (e.g. "1m")`)
	}
	w, err := parseDuration("window", c.Window)
	if err != nil {
		return s, err
	}
	if w <= 0 {
		return s, fieldError("window", "must be positive, got "+strconv.Quote(c.Window))
	}
	s.rule.Window = w
	if c.SubWindow != "" {
		t, err := parseDuration("subWindow", c.SubWindow)
		if err != nil {
			return s, err
		}
		if t <= 0 {
			return s, fieldError("subWindow", "must be positive, got "+strconv.Quote(c.SubWindow))
		}
		s.rule.SubWindow = t
	}
	if c.Limit <= 0 {
		return s, fieldError("limit", "required and must be positive, got "+strconv.FormatInt(c.Limit, 10))
	}
	s.rule.Limit = c.Limit
	if c.Cost < 0 {
		return s, fieldError("cost", "must be positive, got "+strconv.FormatInt(c.Cost, 10))
	}
	s.rule.Cost = c.Cost
	if s.rule.Algorithm, err = ratelimit.ParseAlgorithm(c.Algorithm); err != nil {
		return s, fieldError("algorithm", err.Error())
	}
	if err := s.rule.Normalize(); err != nil {
		return s, spelling.Error(err)
	}
	if c.MaxKeys < 0 {
		return s, fieldError("maxKeys", "must not be negative, got "+strconv.Itoa(c.MaxKeys))
	}
	s.maxKeys = c.MaxKeys
	if s.mode, err = httplimit.ParseHeaderMode(c.Headers); err != nil {
		return s, fieldError("headers", err.Error())
	}
	s.status = c.StatusCode
	if s.status == 0 {
		s.status = http.StatusTooManyRequests
	}
	if s.status < 400 || s.status > 599 {
		return s, fieldError("statusCode", "must be between 400 and 599, got "+strconv.Itoa(c.StatusCode))
	}
	s.message = c.Message
	if s.message == "" {
		s.message = defaultMessage
	}
	s.dryRun = c.DryRun
	s.logKey = c.LogKey
	if s.source, s.v6Bits, err = c.SourceCriterion.source(); err != nil {
		return s, err
	}
	if s.redis, err = c.redisSettings(); err != nil {
		return s, err
	}
	if c.CountStatus != nil {
		if s.countStatus, err = countStatus(c.CountStatus); err != nil {
			return s, err
		}
	}
	if len(c.Overrides) > 0 {
		if s.overrides, err = overrides(c.Overrides, s.rule); err != nil {
			return s, err
		}
	}
	if s.persist, err = c.persistSettings(s.redis != nil, s.redis != nil && s.redis.policy == guard.FailLocal); err != nil {
		return s, err
	}
	return s, nil
}
