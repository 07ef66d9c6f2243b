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

// Settled reports whether status is what the client got. status is the
// final status a host recorded for a response (0 for none); a request a
// count_status zone reserved may be refunded only when it is settled and
// its zone does not count it. A client that left (clientGone: its request's
// context ended, by a reset, an HTTP/2 stream reset or giving up) has no
// settled status, nor has a response that wrote none (a panic, a hijack),
// nor a timeout (408, 504) or Caddy's 499 (the client closed the
// request): those keep their count, so that a client cannot walk around
// a limit by leaving before it learns the answer.
func Settled(status int, clientGone bool) bool {
	if clientGone || status == 0 {
		return false
	}
	switch status {
	case http.StatusRequestTimeout, statusClientClosed, http.StatusGatewayTimeout:
		return false
	}
	return true
}

// statusClientClosed is Caddy's and nginx's 499, the status of a request
// whose client closed the connection before the response.
const statusClientClosed = 499
