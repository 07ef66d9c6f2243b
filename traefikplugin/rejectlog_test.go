package traefikplugin

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

var rejectionLineRE = regexp.MustCompile(`^windowlimit: info: middleware "([^"]+)" rejected (a request|key "[^"]*"); (\d+) more rejections since the last line(; zone holds (\d+) keys, evicted (\d+) that still counted)?$`)

// captureRejections sends the rejection lines to a buffer for the test.
func captureRejections(t *testing.T) *lockedBuffer {
	var log lockedBuffer
	rejectLog = &log
	t.Cleanup(func() { rejectLog = debugLog })
	return &log
}

// A flood of rejections is logged at most once a second per middleware,
// and the lines together account for every rejection: each stands for
// itself and the ones it says were suppressed. A middleware keyed by
// the remote address and one keyed by a header both log, and the key
// only with logKey.
func TestRejectionsLoggedOnceASecond(t *testing.T) {
	log := captureRejections(t)
	inline := validConfig()
	inline.Limit = 2
	keyed := validConfig()
	keyed.Limit = 2
	keyed.LogKey = true
	keyed.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-Api-Key"}
	hInline := newMiddleware(t, inline, "inline@file")
	hKeyed := newMiddleware(t, keyed, "keyed@file")
	const requests = 200
	for range requests {
		serve(hInline, "203.0.113.7:1", nil)
		serve(hKeyed, "203.0.113.7:1", http.Header{"X-Api-Key": {"team-a"}})
	}
	// One more line each, whatever the second: it reports the rest.
	for _, h := range []http.Handler{hInline, hKeyed} {
		atomic.StoreInt64(&middlewareOf(h).lastRejectLog, 0)
		serve(h, "203.0.113.7:1", http.Header{"X-Api-Key": {"team-a"}})
	}

	stood := map[string]int{}
	lines := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		m := rejectionLineRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %q is not a rejection line", line)
		}
		name, what := m[1], m[2]
		n, _ := strconv.Atoi(m[3])
		stood[name] += 1 + n
		lines[name]++
		switch {
		case name == "inline@file" && what != "a request":
			t.Errorf("without logKey the line names %s", what)
		case name == "keyed@file" && what != `key "team-a"`:
			t.Errorf("with logKey the line names %s, want key \"team-a\"", what)
		}
		if m[4] == "" || m[5] != "1" || m[6] != "0" {
			t.Errorf("line %q: want the zone's 1 key and 0 evictions", line)
		}
	}
	for _, name := range []string{"inline@file", "keyed@file"} {
		// 201 requests, 2 allowed: 199 rejections, in 2 or 3 lines (the
		// flood may cross a second).
		if stood[name] != requests-1 || lines[name] < 2 || lines[name] > 3 {
			t.Errorf("%s: %d lines standing for %d rejections, want 2 or 3 lines for %d", name, lines[name], stood[name], requests-1)
		}
	}
}

// Dry run keeps its own line and logs no rejection: nothing was rejected.
func TestDryRunLogsNoRejection(t *testing.T) {
	log := captureRejections(t)
	dryRunLog = &lockedBuffer{}
	t.Cleanup(func() { dryRunLog = debugLog })
	c := validConfig()
	c.Limit = 1
	c.DryRun = true
	h := newMiddleware(t, c, "dry-reject@file")
	for range 5 {
		serve(h, "203.0.113.7:1", nil)
	}
	if got := log.String(); got != "" {
		t.Errorf("dry run logged rejections: %q", got)
	}
}
