package traefikplugin

import (
	"net/http"
	"testing"
)

// A bracketed IPv6 remote address without a port is its address, grouped
// as with a port: brackets must not give every address of a /64 a key of
// its own.
func TestBracketedRemoteAddrWithoutPort(t *testing.T) {
	for _, addr := range []string{"[2001:db8:1:2::1]", "[2001:db8:1:2::ffff]", "[2001:db8:1:2::1]:443"} {
		if got := addrKey(addr, 64); got != "2001:db8:1:2::/64" {
			t.Errorf("addrKey(%q) = %q, want 2001:db8:1:2::/64", addr, got)
		}
		r := &http.Request{RemoteAddr: addr, Header: http.Header{}}
		if got := clientIP(&ipStrategy{v6Bits: 64}, r); got != "2001:db8:1:2::/64" {
			t.Errorf("clientIP of %q = %q, want 2001:db8:1:2::/64", addr, got)
		}
	}
	// Junk stays junk, never a crash.
	for _, addr := range []string{"", "[", "]", "[]", "[::1", ":", "[[::1]]"} {
		addrKey(addr, 64)
		clientIP(&ipStrategy{v6Bits: 64}, &http.Request{RemoteAddr: addr, Header: http.Header{}})
	}
}
