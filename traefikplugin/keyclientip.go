package traefikplugin

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// maxForwardedHops bounds the X-Forwarded-For entries an ipStrategy with
// excluded IPs examines. A header of thousands of excluded addresses then
// costs no more than a few dozen.
const maxForwardedHops = 64

const headerXFF = "X-Forwarded-For"

// ipStrategy is a validated IPStrategy: it picks the client address of a
// request with the semantics of Traefik's ipStrategy:
//
//   - depth > 0: the depth-th entry of X-Forwarded-For counted from the
//     right (1 is the address the nearest proxy appended), or "" when the
//     header has fewer entries;
//   - excluded IPs: the rightmost X-Forwarded-For entry that is not in an
//     excluded range (empty entries skipped), or "" when every entry is;
//   - neither: the host part of the request's remote address.
//
// The address chosen is grouped by its IPv6 subnet, /64 unless told
// otherwise (see httplimit.DefaultIPv6Prefix); an IPv4-mapped address is
// IPv4.
//
// Where it differs from Traefik v3.6, on purpose: IPv6 is grouped by /64
// by default (Traefik keeps addresses apart unless ipv6Subnet is set);
// several X-Forwarded-For lines form one list (Traefik reads only the
// first line, which a client controls when a proxy appends to the last);
// an entry written with a port ("203.0.113.7:4711", "[2001:db8::1]:443")
// counts as its address, so that a proxy adding ports does not give every
// connection its own key; the IPv6 subnet also applies to the excluded-IPs
// strategy; and depth with excluded IPs is a configuration error rather
// than excluded IPs ignored.
//
// An ipStrategy is immutable and safe for concurrent use.
type ipStrategy struct {
	depth    int
	excluded []netip.Prefix
	v6Bits   int
}

// ipStrategyField names the settings of an IPStrategy in errors.
const ipStrategyField = "sourceCriterion.ipStrategy"

// newIPStrategy returns the strategy for a trusted depth, a list of
// excluded addresses or CIDR ranges, and the prefix length that groups
// IPv6 clients: 0 for httplimit.DefaultIPv6Prefix, 128 to keep addresses
// apart. Every bad value is reported with the full name of its setting
// (sourceCriterion.ipStrategy.depth, .excludedIPs or .ipv6Subnet).
func newIPStrategy(depth int, excludedIPs []string, ipv6Subnet int) (*ipStrategy, error) {
	if depth < 0 {
		return nil, fieldError(ipStrategyField+".depth", "must not be negative, got "+strconv.Itoa(depth))
	}
	if ipv6Subnet < 0 || ipv6Subnet > 128 {
		return nil, fieldError(ipStrategyField+".ipv6Subnet", "must be between 1 and 128 (0 or unset: "+strconv.Itoa(httplimit.DefaultIPv6Prefix)+"; 128 keeps addresses apart), got "+strconv.Itoa(ipv6Subnet))
	}
	s := &ipStrategy{depth: depth, v6Bits: ipv6Subnet}
	if ipv6Subnet == 0 {
		s.v6Bits = httplimit.DefaultIPv6Prefix
	}
	for i, e := range excludedIPs {
		p, err := parseRange(strings.TrimSpace(e))
		if err == errMappedRange {
			return nil, fieldError(ipStrategyField+".excludedIPs["+strconv.Itoa(i)+"]", quoteValue(e)+" is an IPv4-mapped range shorter than /96, which reaches beyond the IPv4 addresses: write the IPv4 range (::ffff:10.0.0.0/104 is 10.0.0.0/8)")
		}
		if err != nil {
			return nil, fieldError(ipStrategyField+".excludedIPs["+strconv.Itoa(i)+"]", quoteValue(e)+" is neither an IP address nor a CIDR range")
		}
		s.excluded = append(s.excluded, p)
	}
	if depth > 0 && len(s.excluded) > 0 {
		return nil, fieldError(ipStrategyField+".excludedIPs", "cannot be combined with depth (choose one; Traefik's built-in middleware ignores excludedIPs when depth is set)")
	}
	return s, nil
}

// errMappedRange is parseRange's error for an IPv4-mapped range shorter
// than /96.
var errMappedRange = errors.New("IPv4-mapped range shorter than /96")

// parseRange parses an address or a CIDR range into a prefix. An address or
// range written in IPv4-mapped IPv6 form becomes its IPv4 address or range
// (::ffff:10.0.0.0/104 is 10.0.0.0/8), as isExcluded unmaps the addresses
// it checks; a mapped range shorter than /96 is an error.
func parseRange(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.WithZone("").Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, errMappedRange
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// clientIP returns the key of the client address of r: the address
// pickIP finds, an IPv6 address grouped by the strategy's subnet.
func clientIP(s *ipStrategy, r *http.Request) string {
	ip := pickIP(s, r)
	if strings.IndexByte(ip, ':') >= 0 {
		return httplimit.MaskIP(ip, 0, s.v6Bits) // IPv6 grouped, IPv4-mapped as IPv4
	}
	return ip
}

// pickIP returns the client address of r as the strategy picks it. It is
// taken before any grouping; "" means none (X-Forwarded-For shorter than
// the depth, or every entry excluded). Malformed entries are returned as they
// are, trimmed of spaces.
func pickIP(s *ipStrategy, r *http.Request) string {
	if s.depth > 0 {
		return normalizeIP(forwardedAt(r.Header[headerXFF], s.depth))
	}
	if s.excluded != nil {
		return firstNotExcluded(s, r.Header[headerXFF])
	}
	return remoteHost(r.RemoteAddr)
}

// addrKey returns the key of a request's remote address addr as a
// keySource with neither depth nor excluded IPs computes it: the host part
// (the whole address when it has no port), an IPv6 address grouped by
// v6Bits (see httplimit.MaskIP). A host that is not an address is bounded
// (httplimit.BoundKey) only when it has no port: net/http writes
// RemoteAddr as an address and port, and the zone and the Redis store
// hold a long key as a hash anyway.
// ServeHTTP inlines its first lines, which are all an IPv4 address takes,
// and calls addrKeyRest for the rest.
func addrKey(addr string, v6Bits int) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || addr[0] == '[' {
		return addrKeyRest(addr, v6Bits)
	}
	return host // no colon: IPv4 (or junk), never "sha256:..." (see httplimit.BoundKey)
}

// addrKeyRest is addrKey for an address that is bracketed (IPv6) or has
// no port. Its common case, an IPv6 address to group, is inline, not a
// call to httplimit.MaskAddr, which costs about 5 µs more under yaegi.
func addrKeyRest(addr string, v6Bits int) string {
	host := remoteHost(addr)
	a, err := netip.ParseAddr(host)
	if err != nil {
		return httplimit.BoundKey(host)
	}
	if a.Is4In6() || a.Is4() || v6Bits <= 0 || v6Bits >= 128 {
		return httplimit.MaskAddr(a, host, 0, v6Bits) // short, never "sha256:..."
	}
	p, _ := a.Prefix(v6Bits) // IPv6 and 0 < v6Bits < 128: no error
	return p.String()
}

// remoteHost returns the host part of a remote address. An address with
// no port is returned as it is, without the brackets of an IPv6 address
// ("[2001:db8::1]"), so that it is grouped as one with a port.
func remoteHost(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		if n := len(addr); n > 2 && addr[0] == '[' && addr[n-1] == ']' {
			return addr[1 : n-1]
		}
		return addr
	}
	return host
}

// forwardedAt returns the depth-th comma-separated entry counted from the
// right across all lines of a header, trimmed, or "" when there are fewer.
// Empty entries count, as in Traefik.
func forwardedAt(lines []string, depth int) string {
	n := depth
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for {
			j := strings.LastIndexByte(line, ',')
			n--
			if n == 0 {
				return strings.TrimSpace(line[j+1:])
			}
			if j < 0 {
				break
			}
			line = line[:j]
		}
	}
	return ""
}

// firstNotExcluded returns the rightmost entry not in an excluded range.
// Empty entries are skipped; "" means none among the last
// maxForwardedHops entries of the header lines (empty ones included).
func firstNotExcluded(s *ipStrategy, lines []string) string {
	hops := 0
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for {
			j := strings.LastIndexByte(line, ',')
			hops++
			if hops > maxForwardedHops {
				return ""
			}
			e := strings.TrimSpace(line[j+1:])
			if e != "" {
				e = normalizeIP(e)
				if !isExcluded(s, e) {
					return e
				}
			}
			if j < 0 {
				break
			}
			line = line[:j]
		}
	}
	return ""
}

// isExcluded reports whether the address e is in an excluded range; a
// string that is not an address is not.
func isExcluded(s *ipStrategy, e string) bool {
	a, err := netip.ParseAddr(e)
	if err != nil {
		return false
	}
	a = a.WithZone("").Unmap()
	for _, p := range s.excluded {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// normalizeIP returns the address of an X-Forwarded-For entry written with
// a port or in brackets; anything else is returned as it is.
func normalizeIP(e string) string {
	if e == "" {
		return e
	}
	if _, err := netip.ParseAddr(e); err == nil {
		return e
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		return ap.Addr().String()
	}
	if len(e) > 2 && e[0] == '[' && e[len(e)-1] == ']' {
		if a, err := netip.ParseAddr(e[1 : len(e)-1]); err == nil {
			return a.String()
		}
	}
	return e
}
