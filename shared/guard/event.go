package guard

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// FieldOnStoreError is the setting of the failure policy (Options.OnError)
// in the errors of NewLogged.
const FieldOnStoreError ratelimit.Field = "OnError"

// Event is what a guard reports to its host's log: a failure of the store,
// a request the store could not count (Options.NotCounted), the host's
// own backlog of calls, or the store answering again.
type Event struct {
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
	// Store names the store, as Options.Store does.
	Store string

	notCounted bool
}

// NotCounted reports whether e is the store answering that it would admit
// requests but cannot count them (Options.NotCounted), rather than a
// failure.
func (e *Event) NotCounted() bool { return e.notCounted }

// Overloaded reports whether e is calls not sent for the host's own
// backlog (see ErrOverloaded) rather than a failure of the store.
func (e *Event) Overloaded() bool { return e.Err != nil && errors.Is(e.Err, ErrOverloaded) }

// Message describes e in a sentence without its error and its count of
// suppressed errors, for a host that logs those as fields of their own;
// spell names the setting of the failure policy.
func (e *Event) Message(spell *ratelimit.Spelling) string {
	decided := spell.Name(FieldOnStoreError) + " " + e.Policy.String()
	switch {
	case e.Err == nil:
		return e.Store + " store answers again after " + e.Down.String()
	case e.NotCounted():
		return e.Err.Error() + "; they are decided by " + decided
	case e.Overloaded():
		return e.Store + " calls waited too long behind this instance's own and were not sent (load here, not a " +
			e.Store + " failure); requests decided by " + decided
	}
	return e.Store + " store failed; requests decided by " + decided
}

// Line describes e in one line with its error and its count of suppressed
// errors, for a host that logs plain lines.
func (e *Event) Line(spell *ratelimit.Spelling) string {
	var line string
	switch {
	case e.Err == nil || e.NotCounted() || e.Overloaded():
		line = e.Message(spell)
	default:
		line = e.Store + " store failed: " + e.Err.Error() + "; requests decided by " + spell.Name(FieldOnStoreError) + " " + e.Policy.String()
	}
	if e.Suppressed > 0 {
		line += "; " + strconv.FormatInt(e.Suppressed, 10) + " more errors since the last line"
	}
	return line
}

// NewLogged returns a Guard in front of remote that logs its events.
// Failures and recoveries go to log, at most one failure of each kind per
// ErrorInterval. opts.Probe nil means remote's Ping, when
// it has one; opts.LogError and opts.LogRecovered are set from log. Call
// Close to stop its probe.
func NewLogged(remote ratelimit.Store, opts Options, log func(Event)) (*Guard, error) {
	if remote == nil {
		return nil, errors.New("guard: no remote store")
	}
	if opts.OnError > FailLocal {
		return nil, &ratelimit.FieldError{Field: FieldOnStoreError, Msg: "unknown failure policy " + opts.OnError.String()}
	}
	if p, ok := remote.(interface{ Ping(context.Context) error }); ok && opts.Probe == nil {
		opts.Probe = p.Ping
	}
	if opts.Store == "" {
		opts.Store = "remote"
	}
	if log != nil {
		policy, store, notCounted := opts.OnError, opts.Store, opts.NotCounted
		opts.LogError = func(err error, suppressed int64) {
			e := Event{Err: err, Suppressed: suppressed, Policy: policy, Store: store}
			e.notCounted = notCounted != nil && errors.Is(err, notCounted)
			log(e)
		}
		opts.LogRecovered = func(down time.Duration) {
			log(Event{Down: down, Policy: policy, Store: store})
		}
	}
	return New(remote, opts)
}
