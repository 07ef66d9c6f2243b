local floor, ceil = math.floor, math.ceil
local now = tonumber(ARGV[1])
if now == 0 then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end

local function fmt(x) return string.format('%.0f', x) end

-- The sliding count weights the leaving sub-window's count l by the part
-- r/T of it still inside the window. Decisions use l*r/T rounded up or
-- down in whole numbers, computed from integer products (exact below
-- 2^53), so that they never depend on a float tolerance.
local function ceilDiv(x, d)
  local q = (x - x % d) / d
  if x % d > 0 then q = q + 1 end
  return q
end
local function floorDiv(x, d) return (x - x % d) / d end

-- cell returns the count of sub-window b in state s.
local function cell(s, b)
  if s.newest == nil or b > s.newest or b <= s.newest - s.m then return 0 end
  return s.ring[b % s.m] or 0
end

local function buckets(s, key, alg, W, T, N, cost, spec, t)
  local k = W / T
  local m = k + 1
  s.m, s.T, s.spec, s.cost = m, T, spec, cost
  local reach = k + 1
  if alg == 1 then reach = 1 end
  s.reach = reach
  s.ring = {}
  local h = redis.pcall('HGETALL', key)
  if h.err then
    s.stale = true
  else
    for j = 1, #h, 2 do
      local cellIndex = tonumber(h[j])
      if h[j] == spec then
        s.newest = tonumber(h[j + 1])
      elseif cellIndex == nil or cellIndex < 0 then
        s.stale = true -- the newest field of another rule, or not ours
      else
        s.ring[cellIndex] = tonumber(h[j + 1])
      end
    end
    if s.newest == nil and #h > 0 then s.stale = true end
  end
  if s.stale then
    s.newest = nil
    s.ring = {}
  end
  local c = floor(t / T)
  if s.newest ~= nil and c < s.newest then
    c = s.newest -- the clock went back: stay in the newest sub-window
    t = c * T
  end
  s.c, s.t = c, t
  -- The window's sub-windows that hold a count: those within the m newest.
  local sum = 0
  local newest, ring = s.newest, s.ring
  if newest ~= nil then
    local lo, hi = c - k + 1, c
    if lo <= newest - m then lo = newest - m + 1 end
    if hi > newest then hi = newest end
    for b = lo, hi do sum = sum + (ring[b % m] or 0) end
  end
  -- whole is the count rounded up: the sub-windows inside plus the
  -- leaving one, weighted (sliding) or whole (strict).
  local whole = sum
  if reach > 1 then
    local leaving = cell(s, c - k)
    if alg == 0 then
      whole = whole + ceilDiv(leaving * ((c + 1) * T - t), T)
    else
      whole = whole + leaving
    end
  end
  if whole + cost <= N then
    return 1, N - cost - whole, 0, (c + reach) * T - t
  end
  -- RetryAfter: walk the sub-windows to come until the count falls enough.
  local need = N - cost
  local retry = (c + reach) * T - t
  for j = 0, k do
    local cj = c + j
    local start = cj * T
    if j == 0 then start = t end
    local leaving = 0
    if reach > 1 then leaving = cell(s, cj - k) end
    if alg ~= 0 then
      if sum + leaving <= need then retry = start - t break end
    elseif sum + ceilDiv(leaving * ((cj + 1) * T - start), T) <= need then
      retry = start - t break
    elseif sum <= need and leaving > 0 then
      -- The first instant at which l*(end-x)/T <= need-sum.
      local at = (cj + 1) * T - t - floorDiv((need - sum) * T, leaving)
      if at < start - t then at = start - t end
      retry = at break
    end
    if j < k then sum = sum - cell(s, cj - k + 1) end
  end
  local reset = 0
  for b = c, c - reach + 1, -1 do
    if cell(s, b) ~= 0 then reset = (b + reach) * T - t break end
  end
  local remaining = N - whole
  if remaining < 0 then remaining = 0 end
  return 0, remaining, retry, reset
end

-- Over maxmemory (noeviction), Redis refuses a write that uses memory when
-- it is the first write of a script, and lets every write pass once the
-- script has written anything, even a DEL. So the decisions write nothing,
-- the first write of the first commit is one that uses memory, through
-- pcall, and when Redis refuses it nothing has been written: the script
-- then reports that it could not count the request.
local function refused(r)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'OOM', 1, true) then return true end
    error(r.err)
  end
  return false
end

-- write runs a write that uses memory and reports whether Redis refused it
-- for lack of memory; only the script's first write (guard) can be.
local function write(guard, ...)
  if guard then return refused(redis.pcall(...)) end
  redis.call(...)
  return false
end

-- full asks, for a commit that must delete first, whether Redis refuses
-- writes for memory: SETRANGE with nothing to write uses memory but
-- changes no key (a key of another type answers WRONGTYPE, ignored).
local function full(key)
  local r = redis.pcall('SETRANGE', key, 0, '')
  return type(r) == 'table' and r.err ~= nil and string.find(r.err, 'OOM', 1, true) ~= nil
end

-- commitBuckets counts the request; it reports true if Redis refused it.
local function commitBuckets(s, key, guard)
  if s.stale then
    if guard and full(key) then return true end
    redis.call('DEL', key)
    s.newest = nil
  end
  local c, m = s.c, s.m
  local slot = c % m
  if s.newest ~= nil and c == s.newest then
    return write(guard, 'HSET', key, slot, (s.ring[slot] or 0) + s.cost)
  end
  -- A new sub-window: write it and the newest index, drop the other cells
  -- it reuses, and expire the key when its newest sub-window stops
  -- counting. Later writes in this sub-window need no PEXPIRE: their
  -- counts stop counting at the same moment.
  if write(guard, 'HSET', key, slot, s.cost, s.spec, fmt(c)) then return true end
  if s.newest ~= nil then
    local gone = {}
    local last = c
    if last > s.newest + m then last = s.newest + m end
    for b = s.newest + 1, last do
      if b % m ~= slot then gone[#gone + 1] = b % m end
    end
    if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
  end
  redis.call('PEXPIRE', key, ceil(((c + s.reach) * s.T - s.t) / 1000) + 1)
  return false
end

local function logTake(s, key, W, N, cost, t)
  s.W, s.cost = W, cost
  local top = redis.pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  local n, old = 0, 0
  if top.err then
    s.stale = true
  elseif #top > 0 then
    if tonumber(top[2]) > t then t = tonumber(top[2]) end
    -- The window holds the scores above t - W. The older ones, at the
    -- head, are counted here (cheaper than counting the window) and
    -- removed when the request is counted.
    old = redis.call('ZCOUNT', key, '-inf', fmt(t - W))
    n = redis.call('ZCARD', key) - old
  end
  s.t, s.n, s.old = t, n, old
  if n + cost <= N then
    return 1, N - n - cost, 0, W
  end
  local at = old + n + cost - N - 1
  local first = redis.call('ZRANGE', key, at, at, 'WITHSCORES')
  local remaining = N - n
  if remaining < 0 then remaining = 0 end -- charged over the limit
  return 0, remaining, tonumber(first[2]) + W - t, tonumber(top[2]) + W - t
end

-- commitLog counts the request; it reports true if Redis refused it.
local function commitLog(s, key, guard)
  if s.stale then
    if guard and full(key) then return true end
    redis.call('DEL', key)
    s.n, s.old = 0, 0
  end
  local ts = fmt(s.t)
  local add = {}
  for i = 1, s.cost do
    add[#add + 1] = ts
    add[#add + 1] = ts .. '.' .. (s.n + i)
  end
  if write(guard, 'ZADD', key, unpack(add)) then return true end
  if s.old > 0 then redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(s.t - s.W)) end
  redis.call('PEXPIRE', key, ceil(s.W / 1000) + 1)
  return false
end

local out, states, modes, all = {}, {}, {}, true
for i = 1, #KEYS do
  local a = 2 + 7 * (i - 1)
  local mode = tonumber(ARGV[a + 6])
  modes[i] = mode
  local alg = tonumber(ARGV[a])
  local W, T = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local N, cost = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  -- Every field that buckets, logTake and the commits set, so that the
  -- table is sized once.
  local s = {alg = alg, m = 0, T = 0, spec = false, cost = 0, reach = 0, ring = false,
    newest = nil, c = 0, t = 0, stale = false, W = 0, n = 0, old = 0}
  local ok, remaining, retry, reset
  if alg == 3 then
    ok, remaining, retry, reset = logTake(s, KEYS[i], W, N, cost, now)
  else
    ok, remaining, retry, reset = buckets(s, KEYS[i], alg, W, T, N, cost, ARGV[a + 5], now)
  end
  states[i] = s
  if ok == 0 and mode ~= 2 then all = false end
  out[#out + 1] = ok
  out[#out + 1] = remaining
  out[#out + 1] = retry
  out[#out + 1] = reset
end
-- The first write of the call is the one Redis may refuse for memory.
local first = true
for i = 1, #KEYS do
  local mode = modes[i]
  if mode == 2 or (mode == 0 and all) then
    local s, oom = states[i], false
    if s.alg == 3 then oom = commitLog(s, KEYS[i], first) else oom = commitBuckets(s, KEYS[i], first) end
    first = false
    if oom then
      out[#out + 1] = 1 -- admitted but not counted: out of memory
      break
    end
  end
end
return out
