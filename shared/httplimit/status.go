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
