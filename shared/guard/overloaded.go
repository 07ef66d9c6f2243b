package guard

import "errors"

// ErrOverloaded is the error a ScriptRunner wraps when it did not send a
// call because the call waited too long behind the host's own calls: the
// caller's backlog, not a failure of the store, which may be answering
// every call it gets. Guard decides such a request by its failure policy
// without tripping the breaker, which would otherwise let a flood open it
// with its own load and so turn the policy on for everyone.
var ErrOverloaded = errors.New("store call not sent: too many calls were waiting for the store")
