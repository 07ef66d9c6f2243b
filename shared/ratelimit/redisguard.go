package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// GuardEvent is what the guard of a Redis store reports to its host's
// log: a failure, Redis out of memory, the host's own backlog of calls, or
// the store answering again.
type GuardEvent struct {
	// Err is the store's error; nil when the store answers again.
	Err error
	// Suppressed counts the errors of the same kind not reported since
	// the previous event.
	Suppressed int64
	// Down is how long the store was unavailable, when Err is nil.
	Down time.Duration
	// Policy is the failure policy that decides the requests the store
	// cannot.
	Policy FailurePolicy
}

// OutOfMemory reports whether e is Redis refusing to count for lack of
// memory (see ErrOutOfMemory) rather than a failure.
func (e *GuardEvent) OutOfMemory() bool { return e.Err != nil && errors.Is(e.Err, ErrOutOfMemory) }

// Overloaded reports whether e is calls not sent for the host's own
// backlog (see ErrOverloaded) rather than a failure of Redis.
func (e *GuardEvent) Overloaded() bool { return e.Err != nil && errors.Is(e.Err, ErrOverloaded) }

// Message describes e in a sentence without its error and its count of
// suppressed errors, for a host that logs those as fields of their own;
// spell names the setting of the failure policy.
func (e *GuardEvent) Message(spell *Spelling) string {
	switch {
	case e.Err == nil:
		return "redis store answers again after " + e.Down.String()
	case e.OutOfMemory():
		return "redis is out of memory (maxmemory reached): requests it would admit cannot be counted and are decided by " +
			spell.Name(FieldOnStoreError) + " " + e.Policy.String() + "; raise maxmemory or see the sizing guide"
	case e.Overloaded():
		return "redis calls waited too long behind this instance's own and were not sent (load here, not a redis failure); requests decided by " +
			spell.Name(FieldOnStoreError) + " " + e.Policy.String()
	}
	return "redis store failed; requests decided by " + spell.Name(FieldOnStoreError) + " " + e.Policy.String()
}

// Line describes e in one line with its error and its count of suppressed
// errors, for a host that logs plain lines.
func (e *GuardEvent) Line(spell *Spelling) string {
	var line string
	switch {
	case e.Err == nil || e.OutOfMemory() || e.Overloaded():
		line = e.Message(spell)
	default:
		line = "redis store failed: " + e.Err.Error() + "; requests decided by " + spell.Name(FieldOnStoreError) + " " + e.Policy.String()
	}
	if e.Suppressed > 0 {
		line += "; " + strconv.FormatInt(e.Suppressed, 10) + " more errors since the last line"
	}
	return line
}

// NewRedisGuard returns the Guard a host puts in front of a Redis store:
// requests the store cannot decide go by policy, probe (nil means
// store.Ping) closes the breaker again, and failures and recoveries go to
// log, at most one failure per DefaultErrorInterval. Call Close to stop
// its probe.
func NewRedisGuard(store *RedisStore, policy FailurePolicy, probe func(context.Context) error, log func(GuardEvent)) (*Guard, error) {
	if store == nil {
		return nil, errors.New("guard: no redis store")
	}
	if policy > FailLocal {
		return nil, fieldError(FieldOnStoreError, "unknown failure policy "+policy.String())
	}
	if probe == nil {
		probe = store.Ping
	}
	opts := GuardOptions{OnError: policy, Probe: probe}
	if log != nil {
		opts.LogError = func(err error, suppressed int64) {
			log(GuardEvent{Err: err, Suppressed: suppressed, Policy: policy})
		}
		opts.LogRecovered = func(down time.Duration) {
			log(GuardEvent{Down: down, Policy: policy})
		}
	}
	return NewGuard(store, opts)
}
