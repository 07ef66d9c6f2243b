-- windowlimit's in-flight slots: at most n requests of a key held at once
-- across every instance sharing the Redis. This file is the source;
-- slots_lua.go holds it as a Go string (yaegi cannot embed files), and
-- TestSlotsScriptSource fails when the two differ (go generate
-- ./shared/redisstore copies it).
--
-- KEYS[1] is a key's set of slots, <prefix><zone>:{<key>}:slots (see
-- SlotsKey): a sorted set whose members are slots (a holder's id, ':' and
-- its counter) and whose scores are each slot's expiry in milliseconds of
-- the server's TIME, never a proxy's clock. A slot whose holder stops
-- renewing it is free once its expiry passes; nothing else frees a slot
-- but its holder's release and an operator's reset.
--
-- | ARGV[1] mode | ARGV after it            | reply                           |
-- |--------------|--------------------------|---------------------------------|
-- | 0 take       | n, ttl ms, member        | {1, held after} or {0, held}    |
-- | 1 release    | members...               | {slots released}                |
-- | 2 renew      | ttl ms, members...       | one 1 (renewed) or 0 (gone) per member |
-- | 3 count      | -                        | {slots held now}                |
-- | 4 reset      | -                        | {slots freed}                   |
--
-- Every write sets the set's PEXPIRE to the ttl: each score is at most its
-- write's time plus the ttl, so the set never outlives its newest slot.
local mode = ARGV[1]
local key = KEYS[1]

if mode == '1' then
  return {redis.call('ZREM', key, unpack(ARGV, 2))}
end

local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
-- Expired slots go first: their holders stopped renewing them.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)

if mode == '0' then
  local n = tonumber(ARGV[2])
  local ttl = tonumber(ARGV[3])
  local held = redis.call('ZCARD', key)
  if held >= n then
    return {0, held}
  end
  redis.call('ZADD', key, now + ttl, ARGV[4])
  redis.call('PEXPIRE', key, ttl)
  return {1, held + 1}
elseif mode == '2' then
  local ttl = tonumber(ARGV[2])
  local out = {}
  local any = false
  for i = 3, #ARGV do
    -- A slot that is gone (released, expired, reset) stays gone.
    if redis.call('ZSCORE', key, ARGV[i]) then
      redis.call('ZADD', key, now + ttl, ARGV[i])
      out[#out + 1] = 1
      any = true
    else
      out[#out + 1] = 0
    end
  end
  if any then
    redis.call('PEXPIRE', key, ttl)
  end
  return out
elseif mode == '3' then
  return {redis.call('ZCARD', key)}
elseif mode == '4' then
  local held = redis.call('ZCARD', key)
  redis.call('DEL', key)
  return {held}
end
return redis.error_reply('windowlimit slots: unknown mode ' .. tostring(mode))
