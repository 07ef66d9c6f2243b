package httplimit

import "net/http"

// FinalStatus returns the status a response has after WriteHeader(code),
// given the status recorded so far (0 for none): the first final status
// (200 or more), or 101 Switching Protocols, which ends the exchange too.
// An informational response before it, or a superfluous WriteHeader after
// it, which net/http ignores, changes nothing. Both hosts record the
// status that count_status / countStatus charges by with it.
func FinalStatus(recorded, code int) int {
	if recorded == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		return code
	}
	return recorded
}

// ResponseStatus records the status of the final response that a host's
// ResponseWriter wrapper passes on. Each host wraps its own writer type;
// what the calls mean for the status is decided here once. The zero value
// has recorded nothing.
type ResponseStatus struct{ code int }

// Header records a WriteHeader(code).
func (s *ResponseStatus) Header(code int) { s.code = FinalStatus(s.code, code) }

// Body records a write of the body or a flush: with no status written
// before it, net/http sends 200.
func (s *ResponseStatus) Body() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
}

// Code returns the status recorded, or 0 when nothing was written.
func (s *ResponseStatus) Code() int { return s.code }
