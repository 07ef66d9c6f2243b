package httplimit

import "net/netip"

// DefaultIPv6Prefix is the prefix length a client-IP key groups IPv6
// addresses by unless told otherwise. Every IPv6 end site is assigned at
// least a /64 (RFC 6177; SLAAC needs one), so one client can send from
// 2^64 addresses of its own: keyed apart, each address would be a fresh
// budget, a trivial way around any per-client limit and a flood of fresh
// keys from one machine. IPv4 is not grouped by default.
const DefaultIPv6Prefix = 64

// MaskIP groups an address by prefix, so that every address of one network
// shares one key: "203.0.113.77" with v4Bits 24 becomes "203.0.113.0/24",
// "2001:db8:1:2:3:4:5:6" with v6Bits 64 becomes "2001:db8:1:2::/64".
// An IPv4-mapped IPv6 address is IPv4: "::ffff:203.0.113.77" becomes
// "203.0.113.77", then is grouped by v4Bits. A zone ("%eth0") is dropped
// before grouping. Bits of zero, negative, or at least the length of the
// address leave the address as it is; a string that is not an IP is
// returned unchanged.
func MaskIP(s string, v4Bits, v6Bits int) string {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return s
	}
	return MaskAddr(a, s, v4Bits, v6Bits)
}

// MaskAddr is MaskIP of s, already parsed as a, for a caller that parsed
// it anyway. It makes few calls into netip, each of which is costly
// interpreted (see the package documentation).
func MaskAddr(a netip.Addr, s string, v4Bits, v6Bits int) string {
	bits, max := v6Bits, 128
	if a.Is4In6() {
		a = a.Unmap()
		s = a.String()
	}
	if a.Is4() {
		bits, max = v4Bits, 32
	}
	if bits <= 0 || bits >= max {
		return s
	}
	p, err := a.Prefix(bits) // drops the zone
	if err != nil {
		return s
	}
	return p.String()
}

// ValidatePrefixBits reports whether bits is a usable prefix length for
// MaskIP: 0 (no grouping) up to 32 for IPv4 or 128 for IPv6. field names
// the setting in the error.
func ValidatePrefixBits(field string, bits, maxBits int) error {
	if bits < 0 || bits > maxBits {
		return &FieldError{Field: field, Msg: "must be between 0 and " + itoa(int64(maxBits)) + ", got " + itoa(int64(bits))}
	}
	return nil
}
