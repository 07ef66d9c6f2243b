package caddymodule

import (
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// infoEvery is the least time between two info lines about rejections in
// one zone: often enough that an operator finds the line of a client who
// just got a 429, rarely enough that a flood of 429s does not become a
// flood of log lines (logging each one costs more than serving it).
const infoEvery = time.Second

// logDenial logs a rejection: every one at debug level when the logger
// has it enabled, otherwise at most one line per zone every infoEvery at
// info level, which reports how many rejections it stands for and how
// many of those were not logged.
func (h *Handler) logDenial(z *zoneState, r *http.Request, d ratelimit.Decision, key string, now time.Time) {
	if ce := h.logger.Check(zapcore.DebugLevel, "rate limit exceeded"); ce != nil {
		ce.Write(h.denialFields(z, r, d, key, 1)...)
		return
	}
	t := now.UnixNano()
	last := z.lastInfo.Load()
	if t-last < int64(infoEvery) || !z.lastInfo.CompareAndSwap(last, t) {
		z.suppressed.Add(1)
		return
	}
	if ce := h.logger.Check(zapcore.InfoLevel, "rate limit exceeded"); ce != nil {
		ce.Write(h.denialFields(z, r, d, key, z.suppressed.Swap(0)+1)...)
	}
}

// denialFields describes a rejection; rejections is how many it stands
// for, itself and the ones suppressed since the zone's last line.
func (h *Handler) denialFields(z *zoneState, r *http.Request, d ratelimit.Decision, key string, rejections int64) []zap.Field {
	fields := []zap.Field{
		zap.String("zone", z.name),
		zap.String("client_ip", clientIP(r)),
		zap.Duration("retry_after", d.RetryAfter),
		zap.Int64("limit", d.Limit),
		zap.Bool("dry_run", h.DryRun),
		zap.Int64("rejections", rejections),
		zap.Int64("suppressed", rejections-1),
	}
	if h.LogKey {
		fields = append(fields, zap.String("key", key))
	}
	return fields
}

// fullZoneLog returns the Evicting callback of the zone name: a warning
// that the zone evicted keys that still counted (the zone calls it at most
// once a minute).
func fullZoneLog(logger *zap.Logger, name string, maxKeys int) func(uint64) {
	if maxKeys == 0 {
		maxKeys = ratelimit.DefaultMaxKeys
	}
	return func(n uint64) {
		logger.Warn("rate limit zone is full: it evicted keys that still counted (they come back with an over-estimate); raise max_keys if this is your normal traffic, otherwise a flood of fresh keys is on",
			zap.String("zone", name), zap.Int("max_keys", maxKeys), zap.Uint64("evicted", n))
	}
}
