package ratelimit

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Unlimited is the limit of an override that exempts its keys: their
// requests are neither counted nor limited.
const Unlimited int64 = -1

// Override gives the requests it matches a limit of their own. Key is
// either a key, which matches the request's key exactly, or an IP address
// or a CIDR, which matches the client's own address as the host
// determined it, never the key: a client chooses its key (a header, a
// query value), not its address. A single address is a CIDR of one
// address. Limit is Unlimited or a positive N.
type Override struct {
	Key   string
	Limit int64
}

// ParseOverrideLimit reads an override's limit: a positive integer or
// "unlimited".
func ParseOverrideLimit(s string) (int64, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("override limit %q must be a positive integer or unlimited", s)
	}
	return n, nil
}

// ValidLimit reports whether n can be the limit of a key under the
// normalized rule r: at least its cost (below it no request could pass),
// and within the algorithm's bound.
func ValidLimit(r Rule, n int64) bool {
	max := int64(MaxLimit)
	if r.Algorithm == Log {
		max = MaxLogLimit
	}
	return n >= r.Cost && n <= max
}

// Overrides matches requests against a zone's overrides: keys by the
// request's key, CIDRs by its client address. The zero value matches
// nothing. It is safe for concurrent use once built.
type Overrides struct {
	keys     map[string]int64
	prefixes []prefixLimit
}

type prefixLimit struct {
	p     netip.Prefix
	limit int64
}

// NewOverrides checks overrides against the normalized rule r and returns
// their matcher: a key or CIDR given twice, a limit that cannot apply to
// the rule (see ValidLimit), or a malformed CIDR is an error.
func NewOverrides(r Rule, overrides []Override) (*Overrides, error) {
	o := &Overrides{}
	seen := make(map[string]bool)
	for _, ov := range overrides {
		if ov.Key == "" {
			return nil, errors.New("override: empty key")
		}
		if ov.Limit != Unlimited && !ValidLimit(r, ov.Limit) {
			if r.Algorithm == Log && ov.Limit > MaxLogLimit {
				return nil, fmt.Errorf("override %s: limit %d is too large for the log algorithm (at most %d)", ov.Key, ov.Limit, MaxLogLimit)
			}
			if ov.Limit > 0 && ov.Limit < r.Cost {
				return nil, fmt.Errorf("override %s: limit %d is below the cost %d: no request could ever pass", ov.Key, ov.Limit, r.Cost)
			}
			return nil, fmt.Errorf("override %s: limit %d must be a positive integer (at most %d) or unlimited", ov.Key, ov.Limit, int64(MaxLimit))
		}
		if p, ok, err := parseCIDR(ov.Key); err != nil {
			return nil, fmt.Errorf("override %s: %w", ov.Key, err)
		} else if ok {
			name := p.String()
			if seen[name] {
				return nil, fmt.Errorf("override %s: given twice", ov.Key)
			}
			seen[name] = true
			o.prefixes = append(o.prefixes, prefixLimit{p, ov.Limit})
			continue
		}
		if seen[ov.Key] {
			return nil, fmt.Errorf("override %s: given twice", ov.Key)
		}
		seen[ov.Key] = true
		if o.keys == nil {
			o.keys = make(map[string]int64)
		}
		o.keys[ov.Key] = ov.Limit
	}
	// The most specific CIDR wins, whatever the order written.
	sort.SliceStable(o.prefixes, func(i, j int) bool { return o.prefixes[i].p.Bits() > o.prefixes[j].p.Bits() })
	return o, nil
}

// parseCIDR reads s as an IP address (a one-address prefix) or a CIDR.
// It reports false for a key that is neither and has no '/'; with a '/',
// s must be a valid CIDR with no bits set past its length.
func parseCIDR(s string) (netip.Prefix, bool, error) {
	if strings.IndexByte(s, '/') >= 0 {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, false, fmt.Errorf("bad CIDR: %w", err)
		}
		if p.Masked() != p {
			return netip.Prefix{}, false, fmt.Errorf("bad CIDR: bits set after the prefix length (did you mean %s?)", p.Masked())
		}
		return unmapPrefix(p), true, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false, nil
	}
	a = a.Unmap()
	return netip.PrefixFrom(a.WithZone(""), a.BitLen()), true, nil
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix into its IPv4 prefix, as
// Match unmaps the client address.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// Len returns how many overrides o holds.
func (o *Overrides) Len() int { return len(o.keys) + len(o.prefixes) }

// HasCIDRs reports whether o holds a CIDR, so that a host parses the
// client address for Match only when one could match it.
func (o *Overrides) HasCIDRs() bool { return len(o.prefixes) > 0 }

// Match returns the limit of a request with the key key from the client
// address client: the override of the key first, else that of the
// narrowest CIDR holding client. client is the address the host
// determined, its trusted proxies applied, before any grouping by prefix
// (an IPv6 client is matched by its own address, not by its /64); an
// IPv4-mapped address matches as its IPv4 address, and the zero Addr (no
// address known) matches no CIDR. The key is never matched against a
// CIDR, whatever it spells. It reports false when no override matches.
func (o *Overrides) Match(key string, client netip.Addr) (int64, bool) {
	if n, ok := o.keys[key]; ok {
		return n, true
	}
	if len(o.prefixes) == 0 || !client.IsValid() {
		return 0, false
	}
	client = client.Unmap().WithZone("")
	for i := range o.prefixes {
		if o.prefixes[i].p.Contains(client) {
			return o.prefixes[i].limit, true
		}
	}
	return 0, false
}
