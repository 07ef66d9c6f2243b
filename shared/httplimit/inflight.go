package httplimit

// NewInFlightPolicy returns the headers of at most n requests of a key in
// flight, named name: the draft's quota unit "concurrent-requests" and no
// window (RateLimit-Policy: "<name>";q=n;qu="concurrent-requests").
func NewInFlightPolicy(name string, n int64, mode HeaderMode) *Policy {
	p := NewPolicy(name, 0, n, mode)
	p.window = `;qu="concurrent-requests"`
	p.policyStr = p.quoted + ";q=" + itoa(n) + p.window
	return p
}
