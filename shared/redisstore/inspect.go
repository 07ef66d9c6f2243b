package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// redisReadScript returns, without writing anything, what the limiter
// script reads of one key: the time in microseconds (ARGV[1], or the
// server's TIME when it is 0), then the key's kind (0 none, 1 hash, 2
// sorted set, 3 anything the limiter script would start afresh, 4
// string), then for a hash (written by the script's previous version,
// which the script converts) its fields and values as integers, for a
// sorted set its scores, for a string its bytes.
const redisReadScript = `
local now = tonumber(ARGV[1])
if now == 0 then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end
local out = {now, 0}
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'hash' then
  out[2] = 1
  local h = redis.call('HGETALL', KEYS[1])
  for j = 1, #h do
    local n = tonumber(h[j])
    if n == nil or n ~= math.floor(n) then return {now, 3} end
    out[#out + 1] = n
  end
elseif kind == 'string' then
  out[2] = 4
  local v = redis.call('GET', KEYS[1])
  for j = 1, #v do out[#out + 1] = string.byte(v, j) end
elseif kind == 'zset' then
  out[2] = 2
  local z = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for j = 2, #z, 2 do out[#out + 1] = tonumber(z[j]) end
elseif kind ~= 'none' then
  out[2] = 3
end
return out
`

var redisReadSHA = scriptSHA(redisReadScript)

// Inspect returns the state of key in zone z, writing nothing. It is what
// the limiter script would compute at the server's time (the caller's, in
// tests).
func (s *Store) Inspect(ctx context.Context, z *ratelimit.Zone, key string, now time.Time) (ratelimit.KeyState, error) {
	if err := CheckRule(z.Name(), z.Rule()); err != nil {
		return ratelimit.KeyState{}, err
	}
	arg := "0"
	if s.callerTime {
		arg = strconv.FormatInt(now.UnixMicro(), 10)
	}
	res, err := s.evalWith(ctx, redisReadScript, redisReadSHA, []string{Key(s.prefix, z.Name(), key)}, []string{arg})
	if err != nil {
		return ratelimit.KeyState{}, fmt.Errorf("redis: %w", err)
	}
	if len(res) < 2 {
		return ratelimit.KeyState{}, fmt.Errorf("redis inspect script: got %d integers, want at least 2", len(res))
	}
	st := inspectRedis(z, res[0], res[1], res[2:])
	if z.Ban() > 0 {
		if err := s.inspectBan(ctx, z, key, arg, &st); err != nil {
			return ratelimit.KeyState{}, err
		}
	}
	return st, nil
}

// inspectRedis is the state of a key of z at t (microseconds) of the
// kind and data the read script returned.
func inspectRedis(z *ratelimit.Zone, t, kind int64, data []int64) ratelimit.KeyState {
	switch {
	case z.Rule().Algorithm == ratelimit.Log && kind == 2:
		return inspectRedisLog(z.Rule(), t, data)
	case z.Rule().Algorithm != ratelimit.Log && kind == 1 && len(data)%2 == 0:
		return inspectRedisBuckets(z.Rule(), t, data)
	case z.Rule().Algorithm != ratelimit.Log && kind == 4:
		if fields, ok := unpackBuckets(z.Rule(), data); ok {
			return inspectRedisBuckets(z.Rule(), t, fields)
		}
	}
	return ratelimit.KeyState{Tracked: kind != 0, Remaining: z.Rule().Limit} // none, or what the script would start afresh
}

// inspectRedisBuckets is the limiter script's buckets at t (microseconds)
// on a hash of fields and values, for a request of no cost.
func inspectRedisBuckets(r ratelimit.Rule, t int64, fields []int64) ratelimit.KeyState {
	T, k := int64(r.SubWindow/time.Microsecond), int64(r.Window/r.SubWindow)
	m, reach := k+1, k+1
	if r.Algorithm == ratelimit.Fixed {
		reach = 1
	}
	spec := shapeField(r)
	ring := make(map[int64]int64, len(fields)/2)
	newest, haveNewest := int64(0), false
	for j := 0; j < len(fields); j += 2 {
		f, v := fields[j], fields[j+1]
		switch {
		case f == spec:
			newest, haveNewest = v, true
		case f < 0 || f > k:
			// Another rule's: the script starts afresh.
			return ratelimit.KeyState{Tracked: true, Remaining: r.Limit}
		default:
			ring[f] = v
		}
	}
	if !haveNewest {
		return ratelimit.KeyState{Tracked: len(fields) > 0, Remaining: r.Limit}
	}
	cell := func(b int64) int64 {
		if b > newest || b <= newest-m {
			return 0
		}
		return ring[b%m]
	}
	c := t / T
	if c < newest {
		c, t = newest, newest*T
	}
	whole := int64(0)
	for b := c - k + 1; b <= c; b++ {
		whole += cell(b)
	}
	if reach > 1 {
		leaving := cell(c - k)
		if r.Algorithm == ratelimit.Sliding {
			x := leaving * ((c+1)*T - t)
			whole += x / T
			if x%T > 0 {
				whole++
			}
		} else {
			whole += leaving
		}
	}
	st := ratelimit.KeyState{Tracked: true, Count: whole, Remaining: remainingOf(r.Limit, whole)}
	for b := c; b > c-reach; b-- {
		if cell(b) != 0 {
			st.ResetAfter = time.Duration((b+reach)*T-t) * time.Microsecond
			break
		}
	}
	return st
}

// unpackBuckets reads the bytes of a bucket key (see redisScript) as the
// fields of inspectRedisBuckets: the shape and the newest index, then each
// cell's index and count. It reports false for a value the script would
// not read as r's. Today's layout has the shape negated, and after the
// cells the leased units (an integer as wide as the cells) and the key's
// generation (4 bytes); the previous one, which the script still reads, has
// neither.
func unpackBuckets(r ratelimit.Rule, b []int64) ([]int64, bool) {
	m := int64(r.Window/r.SubWindow) + 1
	const head = 15 // the shape (8 bytes) and the newest index (7)
	if len(b) < head {
		return nil, false
	}
	shape, newest := littleEndian(b[0:8], true), littleEndian(b[8:15], true)
	size, ints := int64(head), m+1
	switch shape {
	case -shapeField(r):
		size, ints = size+4, m+2
	case shapeField(r):
	default:
		return nil, false
	}
	w := (int64(len(b)) - size) / ints
	if w < 1 || w > 6 || size+w*ints != int64(len(b)) {
		return nil, false
	}
	shape = shapeField(r)
	fields := make([]int64, 0, 2+2*m)
	fields = append(fields, shape, newest)
	for j := int64(0); j < m; j++ {
		at := head + w*(1+j)
		fields = append(fields, j, littleEndian(b[at:at+w], false))
	}
	return fields, true
}

// littleEndian returns the integer of the bytes b, least significant
// first, signed or not.
func littleEndian(b []int64, signed bool) int64 {
	x := int64(0)
	for j := len(b) - 1; j >= 0; j-- {
		x = x<<8 | b[j]&0xff
	}
	if n := uint(len(b)) * 8; signed && n < 64 && x>>(n-1)&1 == 1 {
		x -= 1 << n
	}
	return x
}

// inspectRedisLog is the limiter script's logTake at t (microseconds) on
// a sorted set's scores, oldest first, for a request of no cost.
func inspectRedisLog(r ratelimit.Rule, t int64, scores []int64) ratelimit.KeyState {
	if len(scores) == 0 {
		return ratelimit.KeyState{Remaining: r.Limit}
	}
	W := int64(r.Window / time.Microsecond)
	top := scores[len(scores)-1]
	if top > t {
		t = top
	}
	n := int64(0)
	for _, sc := range scores {
		if sc > t-W {
			n++
		}
	}
	st := ratelimit.KeyState{Tracked: true, Count: n, Remaining: remainingOf(r.Limit, n)}
	if n > 0 {
		st.ResetAfter = time.Duration(top+W-t) * time.Microsecond
	}
	return st
}

// Forget resets the Redis key of key in z at now, as an operator does,
// and reports whether there was a key: its next request starts one fresh
// budget, on every instance sharing the Redis. Units that other instances
// hold in leases of the key may still be spent: the fresh count starts
// with them counted, so that the reset never admits more than the limit.
// own is the units granted to the caller's own lease of the key, which it
// ended without spending more (see lease.Table.Forget): they are not
// kept. A receipt of before (a count_status reservation) gives nothing
// back to the fresh count.
func (s *Store) Forget(ctx context.Context, z *ratelimit.Zone, key string, now time.Time, own int64) (bool, error) {
	if err := CheckRule(z.Name(), z.Rule()); err != nil {
		return false, err
	}
	at := "0"
	if s.callerTime {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	keys := []string{Key(s.prefix, z.Name(), key)}
	args := []string{at, modeReset, withInt(packRule(z.Rule(), z.Rule().Limit), own)}
	var res []int64
	var err error
	if ban := z.Ban(); ban > 0 {
		// The ban goes with the count (see the script's BANS).
		keys, args = append(keys, keys[0]+banSuffix), append(args, banArg(1, ban))
		res, err = s.evalFull(ctx, keys, args)
	} else {
		res, err = s.eval(ctx, keys, args)
	}
	if err != nil {
		return false, err
	}
	if len(res) != 1 {
		return false, fmt.Errorf("redis limiter script: got %d integers for a reset", len(res))
	}
	return res[0] > 0, nil
}

// KeyPrefix returns the prefix of the store's keys.
func (s *Store) KeyPrefix() string { return s.prefix }

// remainingOf returns limit-count, at least 0.
func remainingOf(limit, count int64) int64 {
	if count >= limit {
		return 0
	}
	return limit - count
}
