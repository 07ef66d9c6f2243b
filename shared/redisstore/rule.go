package redisstore

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// zoneRule identifies what a zone is to a remote store: the name in its
// keys and the rule its counts obey. Zones replaced by a reload with the
// same name and rule share it.
type zoneRule struct {
	name string
	rule ratelimit.Rule
}

// maxCachedRules bounds Store's cache of script arguments.
const maxCachedRules = 1024

// CheckRule reports whether Redis can keep the zone of a normalized rule.
// The script counts time in whole microseconds, and zone must be a usable
// name in a Redis key; the error is a *ratelimit.FieldError. Normalize has
// bounded the window by MaxWindow, whose microseconds Lua's doubles hold
// exactly.
func CheckRule(zone string, r ratelimit.Rule) error {
	if strings.ContainsAny(zone, "{}") {
		return fieldError(ratelimit.FieldName, strconv.Quote(zone)+" must not have braces to be kept in redis")
	}
	if r.Window%time.Microsecond != 0 {
		return fieldError(ratelimit.FieldWindow, r.Window.String()+" must be whole microseconds to be kept in redis")
	}
	if r.SubWindow%time.Microsecond != 0 {
		return fieldError(ratelimit.FieldSubWindow, r.SubWindow.String()+" must be whole microseconds to be kept in redis")
	}
	return nil
}

// ruleArgs returns the script arguments of z's rule, made once per zone
// name and rule: one string, the rule packed as the script reads it with
// struct.unpack (see packRule), so that the script converts no decimal
// text on a request.
func (s *Store) ruleArgs(z *ratelimit.Zone) ([]string, error) {
	key := zoneRule{z.Name(), z.Rule()}
	args := s.args.Load().(*sync.Map)
	if v, ok := args.Load(key); ok {
		return v.([]string), nil
	}
	r := z.Rule()
	if err := CheckRule(z.Name(), r); err != nil {
		return nil, err
	}
	spec := []string{packRule(r, r.Limit)}
	if atomic.AddInt64(&s.argsSize, 1) > maxCachedRules {
		// Start a new cache; the zones in use fill it again.
		args = new(sync.Map)
		s.args.Store(args)
		atomic.StoreInt64(&s.argsSize, 1)
	}
	args.Store(key, spec)
	return spec, nil
}

// packRule returns rule r with limit n as the script's rule argument:
// little-endian, the algorithm in one byte, then in eight bytes each the
// window and the sub-window in microseconds, the limit, the cost and the
// shape (shapeField), struct format '<i1i8i8i8i8i8'.
func packRule(r ratelimit.Rule, n int64) string {
	b := make([]byte, 0, ruleBytes)
	b = append(b, byte(r.Algorithm))
	for _, x := range [...]int64{int64(r.Window / time.Microsecond), int64(r.SubWindow / time.Microsecond), n, r.Cost, shapeField(r)} {
		for j := 0; j < 8; j++ {
			b = append(b, byte(x>>(8*j)))
		}
	}
	return string(b)
}

// withLimit returns the packed rule with the limit n in place of its own.
func withLimit(rule string, n int64) string {
	b := []byte(rule)
	for j := 0; j < 8; j++ {
		b[ruleLimit+j] = byte(n >> (8 * j))
	}
	return string(b)
}

// withInt returns the packed argument s with the integer x appended in
// eight little-endian bytes: a lease's size, a refund's receipt.
func withInt(s string, x int64) string {
	b := make([]byte, 0, len(s)+8)
	b = append(b, s...)
	for j := 0; j < 8; j++ {
		b = append(b, byte(x>>(8*j)))
	}
	return string(b)
}

// shapeField is the shape at the head of a bucket rule's key. It was the
// name of the hash field that held the newest sub-window index in the
// script's previous version, whose keys the script converts. It encodes
// the sub-window T and the count k = W/T, so
// counters written with another sub-window or window are never misread,
// while sliding, strict and fixed (k = 1), which count the same
// sub-windows, keep each other's counts, as a change of limit or cost
// does (TestRedisAlgorithmChange pins each change): a negative
// integer, -((T*1024 + k*4) + unit) with T in seconds, milliseconds or
// microseconds (unit 2, 1, 0), whichever is whole. CheckRule's
// bounds keep it within an int64.
func shapeField(r ratelimit.Rule) int64 {
	t, unit := int64(r.SubWindow/time.Microsecond), int64(0)
	switch {
	case t%1e6 == 0:
		t, unit = t/1e6, 2
	case t%1e3 == 0:
		t, unit = t/1e3, 1
	}
	k := int64(r.Window / r.SubWindow)
	return -(t*1024 + k*4 + unit)
}

// leaseFor returns how long units counted at the script time at (in
// microseconds) stay in the newest sub-window of rule r: until its end.
func leaseFor(r ratelimit.Rule, at int64) time.Duration {
	t := int64(r.SubWindow / time.Microsecond)
	return time.Duration(t-at%t) * time.Microsecond
}

// ruleBytes is the length of a packed rule, and ruleLimit the offset of
// its limit.
const (
	ruleBytes = 41
	ruleLimit = 17
)
