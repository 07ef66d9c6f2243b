package traefikplugin

import (
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// misconfiguredStatus is the status of every request a misconfigured
// middleware refuses.
const misconfiguredStatus = http.StatusInternalServerError

// misconfiguredLogEvery is the least time between two log lines of one
// misconfigured middleware, after the one of New.
const misconfiguredLogEvery = time.Minute

// misconfigured is the handler New returns for a configuration it cannot
// build: it refuses every request with misconfiguredStatus and never
// calls the next handler.
//
// New cannot return the error instead. Traefik then disables the router
// that uses the middleware, and any other router whose rule also matches
// the request (a catch-all PathPrefix(`/`), say) serves it, without the
// limit: a misspelled login limit would open the login to brute force.
// So the route stays up and answers 500, whose body says the limit is
// misconfigured (not how: the client is not the operator), and the log
// names the option at load and at most once a minute after.
type misconfigured struct {
	name string
	err  error
	// lastLog is the Unix second of the last log line.
	lastLog int64
}

// misconfiguredBody is the body of every refused request.
const misconfiguredBody = "rate limit misconfigured: this route is refused until its windowlimit middleware is fixed (see Traefik's log)\n"

// newMisconfigured logs err, the configuration error of the middleware
// name, and returns the handler that refuses its requests.
func newMisconfigured(name string, err error) *misconfigured {
	m := &misconfigured{name: name, err: err, lastLog: time.Now().Unix()}
	io.WriteString(errorLog, m.line(""))
	return m
}

// line is the log line of the configuration error, with what follows it.
func (m *misconfigured) line(more string) string {
	return "windowlimit: error: middleware " + strconv.Quote(m.name) + " is misconfigured: " + m.err.Error() +
		"; every request of its routes is refused with " +
		strconv.Itoa(misconfiguredStatus) + " until the configuration is fixed" + more + "\n"
}

func (m *misconfigured) ServeHTTP(rw http.ResponseWriter, _ *http.Request) {
	now := time.Now().Unix()
	last := atomic.LoadInt64(&m.lastLog)
	if now-last >= int64(misconfiguredLogEvery/time.Second) && atomic.CompareAndSwapInt64(&m.lastLog, last, now) {
		io.WriteString(errorLog, m.line(" (a request was refused)"))
	}
	h := rw.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(misconfiguredBody)))
	rw.WriteHeader(misconfiguredStatus)
	io.WriteString(rw, misconfiguredBody)
}
