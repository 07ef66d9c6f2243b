package guard

import (
	"sync"
	"time"
)

// errorLog passes store errors to a callback at most once per interval, so
// an outage under load logs a line a minute, not a line a request.
type errorLog struct {
	emit     func(err error, suppressed int64)
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

// report hands err to the callback, or counts it if the last one was less
// than an interval ago.
func (l *errorLog) report(err error, now time.Time) {
	if l.emit == nil {
		return
	}
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	l.emit(err, n)
}
