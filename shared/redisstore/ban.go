package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// banSuffix ends the Redis key of a key's ban: the key's own Redis key
// and this, in the same Cluster hash slot (the key's hash tag comes
// first), never another key's (those end with '}').
const banSuffix = ":ban"

// BanKey returns the Redis key that holds the ban of key in zone, for a
// zone with a ban: its value is when the ban ends, in microseconds on
// the script's clock, and it expires then.
func BanKey(prefix, zone, key string) string {
	return Key(prefix, zone, key) + banSuffix
}

// banArg returns the script argument of the ban of the call's item i
// (from 1): the item and the ban in microseconds (see script.lua's
// BANS).
func banArg(i int, ban time.Duration) string {
	return strconv.Itoa(i) + ":" + strconv.FormatInt(int64(ban/time.Microsecond), 10)
}

// redisBanReadScript returns, writing nothing, the time in microseconds
// (ARGV[1], or the server's TIME when it is 0) and when the ban in
// KEYS[1] ends (0 for none).
const redisBanReadScript = `
local now = tonumber(ARGV[1])
if now == 0 then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end
local v = redis.pcall('GET', KEYS[1])
return {now, tonumber(v) or 0}
`

var redisBanReadSHA = scriptSHA(redisBanReadScript)

// evalFull runs the full script (see redisFullScript) as eval runs the
// limiter script.
func (s *Store) evalFull(ctx context.Context, keys, args []string) ([]int64, error) {
	res, err := s.evalWith(ctx, redisFullScript, redisFullScriptSHA, keys, args)
	if err != nil {
		return nil, fmt.Errorf("redis limiter script: %w", err)
	}
	return res, nil
}

// inspectBan adds to st how long key stays banned in z, a zone with a
// ban.
func (s *Store) inspectBan(ctx context.Context, z *ratelimit.Zone, key, arg string, st *ratelimit.KeyState) error {
	res, err := s.evalWith(ctx, redisBanReadScript, redisBanReadSHA, []string{BanKey(s.prefix, z.Name(), key)}, []string{arg})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if len(res) != 2 {
		return fmt.Errorf("redis ban read script: got %d integers, want 2", len(res))
	}
	if left := res[1] - res[0]; left > 0 {
		st.BannedFor = time.Duration(left) * time.Microsecond
		st.Remaining = 0
	}
	return nil
}
