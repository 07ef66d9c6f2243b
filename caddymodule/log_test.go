package caddymodule

import (
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func observe(level zapcore.Level) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return zap.New(core), logs
}

func TestDenialsAreSampledAtInfo(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"flood":{"window":"1m","limit":1}}}`)
	logger, logs := observe(zapcore.InfoLevel)
	h.logger = logger
	z := h.zones[0]
	r := httptest.NewRequest("GET", "/", nil)
	d := ratelimit.Decision{Limit: 1, RetryAfter: time.Second}
	t0 := time.Unix(1_000_000, 0)

	for i := range 1000 {
		h.logDenial(z, r, d, "k", t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("1000 rejections within a second logged %d info lines, want 1", n)
	}
	h.logDenial(z, r, d, "k", t0.Add(infoEvery+time.Second))
	entries := logs.TakeAll()
	if len(entries) != 2 {
		t.Fatalf("%d info lines after %v, want 2", len(entries), infoEvery)
	}
	if got := entries[1].ContextMap()["rejections"]; got != int64(1000) {
		t.Errorf("second line reports %v rejections, want 1000 (999 suppressed + itself)", got)
	}
	if got := entries[0].ContextMap()["zone"]; got != "flood" {
		t.Errorf("zone field %v, want flood", got)
	}
	if _, has := entries[0].ContextMap()["key"]; has {
		t.Error("the key is logged without log_key")
	}
}

func TestDenialsAtDebugAreAllLogged(t *testing.T) {
	h, _ := newHandler(t, `{"log_key":true,"rate_limits":{"flood":{"window":"1m","limit":1}}}`)
	logger, logs := observe(zapcore.DebugLevel)
	h.logger = logger
	r := httptest.NewRequest("GET", "/", nil)
	d := ratelimit.Decision{Limit: 1, RetryAfter: time.Second}
	for range 10 {
		h.logDenial(h.zones[0], r, d, "secret-key", time.Unix(1_000_000, 0))
	}
	if n := logs.FilterLevelExact(zapcore.DebugLevel).Len(); n != 10 {
		t.Fatalf("%d debug lines for 10 rejections, want 10", n)
	}
	if got := logs.All()[0].ContextMap()["key"]; got != "secret-key" {
		t.Errorf("key field %v with log_key, want secret-key", got)
	}
}

func TestRejectionIsLoggedThroughServeHTTP(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"z":{"window":"1m","limit":1}}}`)
	logger, logs := observe(zapcore.InfoLevel)
	h.logger = logger
	statuses(t, h, 3, "203.0.113.7", "/")
	entries := logs.TakeAll()
	if len(entries) != 1 || entries[0].Message != "rate limit exceeded" {
		t.Fatalf("log %v, want one \"rate limit exceeded\" line", entries)
	}
	if got := entries[0].ContextMap()["client_ip"]; got != "203.0.113.7" {
		t.Errorf("client_ip %v, want 203.0.113.7", got)
	}
}

// A flood is logged at most once a second per zone, and each line says
// how many rejections it stands for and how many were not logged.
func TestDenialsAreLoggedEverySecond(t *testing.T) {
	h, _ := newHandler(t, `{"log_key":true,"rate_limits":{"a":{"window":"1m","limit":1},"b":{"window":"1m","limit":1}}}`)
	logger, logs := observe(zapcore.InfoLevel)
	h.logger = logger
	r := httptest.NewRequest("GET", "/", nil)
	d := ratelimit.Decision{Limit: 1, RetryAfter: time.Second}
	t0 := time.Unix(1_000_000, 0)
	for i := range 2500 { // 2.5 s, one rejection a millisecond in each zone
		now := t0.Add(time.Duration(i) * time.Millisecond)
		h.logDenial(h.zones[0], r, d, "key-a", now)
		h.logDenial(h.zones[1], r, d, "key-b", now)
	}
	entries := logs.TakeAll()
	if len(entries) != 6 {
		t.Fatalf("2.5 s of rejections in two zones logged %d lines, want 3 per zone", len(entries))
	}
	var zoneA []map[string]any
	for _, e := range entries {
		if m := e.ContextMap(); m["zone"] == "a" {
			zoneA = append(zoneA, m)
		}
	}
	if len(zoneA) != 3 {
		t.Fatalf("zone a logged %d lines, want 3", len(zoneA))
	}
	if m := zoneA[1]; m["suppressed"] != int64(999) || m["rejections"] != int64(1000) || m["key"] != "key-a" {
		t.Errorf("second line of zone a: suppressed %v, rejections %v, key %v; want 999, 1000, key-a", m["suppressed"], m["rejections"], m["key"])
	}
}
