-- windowlimit's decision script. One call decides one request against
-- every rule of it, atomically, with the semantics of the in-memory zone
-- (take and takeLog in shared/ratelimit).
--
-- This file is the source. yaegi cannot embed files, so script_lua.go
-- holds it as a Go string: go generate ./shared/redisstore copies it, and
-- TestScriptSource fails when the two differ.
--
-- # Arguments
--
-- | argument   | holds                                                     |
-- |------------|-----------------------------------------------------------|
-- | KEYS[i]    | the Redis key of item i                                   |
-- | ARGV[1]    | the time in µs, or 0 for the server's TIME (production passes 0, tests a fixed time) |
-- | ARGV[2i]   | item i's mode (see Modes)                                 |
-- | ARGV[2i+1] | item i's rule, packed by packRule in rule.go, then the mode's own int64s (see Modes) |
--
-- A packed rule is struct '<i1i8i8i8i8i8':
--
-- | field      | holds                                 |
-- |------------|---------------------------------------|
-- | algorithm  | 0 sliding, 1 fixed, 2 strict, 3 log   |
-- | window     | µs                                    |
-- | sub-window | µs                                    |
-- | limit      | N                                     |
-- | cost       | units a request counts                |
-- | shape      | the key's layout (see shapeField)     |
--
-- # Modes
--
-- A call decides (items of modes 0 to 2, mixed), refunds (items of mode
-- 3) or resets (one item of mode 4). "Take's four" are the four integers
-- of a take's reply.
--
-- | mode      | ARGV[2i+1] after the rule       | reply per item                  |
-- |-----------|---------------------------------|---------------------------------|
-- | 0 take    | nothing                         | allowed, remaining, retry-after in µs, reset-after in µs |
-- | 1 reserve | nothing                         | take's four; the time counted at (0 if not counted); the key's generation stamped with LASTSAVE (see stamp), or a log's entries' own (see born) |
-- | 2 lease   | B, the most units to lease      | take's four; the units granted; the time they count at; the key's generation, denied or not (0 for no key, NOGENERATION for a lean one) |
-- | 3 refund  | the receipt's time; its generation; the units granted; the units spent before the generation was last confirmed | 1 given back; 2 counted in the key's next generation instead (see charge); 0 neither |
-- | 4 reset   | the resetting instance's own leased units | 1 if there was a key, else 0 |
--
-- A reservation's refund passes 0 and 0 for the units granted and spent;
-- its rule's cost is the units to give back.
--
-- A take, reserve or lease counts only when every item admits. A refund
-- gives back all its items or none. The reply grows in these cases:
--
-- | case                                         | reply                     |
-- |----------------------------------------------|---------------------------|
-- | every item admits, but Redis over its maxmemory (noeviction) refuses the first write | the items' replies, then one more integer, redisNotCounted; nothing was written |
-- | an item of a zone with a ban (the full script, see the extra blocks below) | one more integer after take's four: 1 if this request started the key's ban, else 0 |
-- | one item with an in-flight slot (the full script), its key's set of slots full | {-1, slots held}; nothing decided or counted |
-- | one item with an in-flight slot, any other case | the item's reply, then one more integer: the slots held with this one once it took it, or 0 when it took none (the request refused, or not counted) |
--
-- # Paths, cheapest first
--
-- | path          | taken by                          | costs               |
-- |---------------|-----------------------------------|---------------------|
-- | lean decision | one bucket item; take, reserve or lease; admitted or denied; a key absent or of this rule | a straight line that makes no function and calls few (an admission on a busy key: the rule's and the key's reads, one span packed; a denial reads its cells into one table); two commands besides TIME (GET, then SETRANGE in place or SET of the whole value) |
-- | lean refund   | one reservation of a bucket key   | in place            |
-- | general path  | all the rest: several items, logs, leases given back, resets, keys of another rule, type or layout, totals that outgrow their width, Redis without the struct library (miniredis, the tests' in-process Redis) | |
--
-- # Keys
--
-- | rule                   | Redis type | value                         |
-- |------------------------|------------|-------------------------------|
-- | sliding, strict, fixed | string     | little-endian: shape i8, newest sub-window index i7, total, cells..., then in the full layout only leased and generation u32 |
-- | log                    | sorted set | the admitted timestamps, one member each: "<t>.<n>", and a reservation's ":<generation>" |
--
-- A bucket key has m = k+1 cells: cell j holds sub-window b with b mod
-- m = j, for the m newest. The total and the cells are integers of w
-- bytes, the fewest (1 to 6) that hold the total. It has two layouts:
--
-- | layout | stored shape | ends with                          | kept while |
-- |--------|--------------|------------------------------------|------------|
-- | lean   | as it is     | the cells                          | plain takes write the key |
-- | full   | negated      | leased (w bytes): the units leases took of the newest sub-window and did not give back; the key's generation (4 bytes) | from the first write by a reservation, a lease or the general path |
--
-- A generation names one count of the key. A receipt of a count that was
-- reset or lost is then never given back from the next one. Only receipts
-- need it, hence the two layouts. A hash (testdata/script-hash.lua) from
-- an earlier version is read as a lean string and rewritten full.
--
-- A log's member "<t>.<n>" is unique: n is above the count in the window
-- and above every n already at t (after a refund the count may be below
-- them). A reservation's members end with ':' and the generation its
-- receipt names (u32 little-endian): a new one for each reservation, never
-- 0, so that its refund takes back its own entries and never another
-- request's, which a later life of the key (after a reset or a loss) may
-- name "<t>.<n>" too. A receipt of generation 0 (an earlier version's)
-- takes back members without one, as that version did.
--
-- # Writes and expiry
--
-- Keys are written only when the whole request is admitted; deciding
-- writes nothing. So Redis over its maxmemory refuses the first write, and
-- the request is not counted at all.
--
-- | key        | TTL set                          | to                      |
-- |------------|----------------------------------|-------------------------|
-- | bucket     | when a new sub-window is written | the moment that sub-window stops counting (at most W+T ahead) |
-- | sorted set | on every write                   | W                       |
--
-- Both get one millisecond more than the count needs: Redis 7.0 sometimes
-- deletes a key at once on PEXPIRE 1 inside a script. Neither uses
-- PEXPIRE NX, which would expire a busy key while it still counts.
local mode = ARGV[2]
local now
if ARGV[1] ~= '0' then
  now = tonumber(ARGV[1])
elseif mode ~= '3' then -- a refund reads the clock only to charge a lease (see charge)
  local tm = redis.call('TIME')
  now = tm[1] * 1000000 + tm[2] -- Lua converts the strings
end
local lib = rawget(_G, 'struct')
local out = nil
-- NOGENERATION is the generation a lease reply names for a lean key:
-- above every generation (generations fit in 32 bits), so that it is
-- never a lease's, which then ends as for a key that was reset (a lean key
-- is one that plain takes made after the key the lease counted in was
-- gone).
local NOGENERATION = 4294967296

-- Bans and in-flight slots (see ban.go and slots.go). The lines from
-- each 'extra:begin' to its 'extra:end' are the full script's only. The
-- script without them, which every other call runs, is the script as it
-- was before bans and slots, and costs what it did. A call on items of
-- zones with a ban, or of one item with a slot, runs the whole text. It
-- ends KEYS with the extra keys, each in its item's hash slot, and ARGV
-- with one argument per extra key:
--
-- | extra key    | its KEYS entry              | its ARGV entry             |
-- |--------------|-----------------------------|----------------------------|
-- | a ban        | the item's key and ':ban'   | '<item>:<ban in µs>'       |
-- | a set of slots (see slots.lua) | the item's key and ':slots' | 's:<n>:<ttl in ms>:<member>' |
--
-- They come off here, so that the rest reads KEYS and ARGV as in any call.
-- extra:begin
local BANS, SLOT = {}, nil
local nb = 2 * #KEYS + 1 - #ARGV
local n = #KEYS - nb
for j = 1, nb do
  local a = ARGV[2 * n + 1 + j]
  local i, d = string.match(a, '^(%d+):(%d+)$')
  if i then
    BANS[tonumber(i)] = {KEYS[n + j], tonumber(d)}
  else
    local sn, ttl, member = string.match(a, '^s:(%d+):(%d+):(.+)$')
    if sn and n == 1 then SLOT = {KEYS[n + j], tonumber(sn), tonumber(ttl), member} end
  end
end
for j = nb, 1, -1 do
  KEYS[n + j] = nil
  ARGV[2 * n + 1 + j] = nil
end
-- A call of one item with a ban, take or reserve: a banned key is
-- answered here; any other takes the lean decision, and its ban after
-- it. Other calls with a ban take the general path.
local BANNED = false
if #KEYS == 1 and BANS[1] and (mode == '0' or mode == '1') then
  local v = tonumber(redis.pcall('GET', BANS[1][1]))
  if v and v > now then
    BANNED = true
    out = {0, 0, v - now, v - now, 0}
    if mode == '1' then out[6], out[7] = 0, 0 end
  end
end
-- A slot is asked before the rate, so that a request refused a slot
-- counts nothing: expired slots go (their holders stopped renewing them),
-- and a full set answers the call. Slots keep the server's TIME in ms,
-- whatever clock the call passes, as slots.lua does.
local FULL, HELD, SLOTNOW = false, 0, 0
if SLOT and not BANNED then
  if ARGV[1] == '0' then
    SLOTNOW = math.floor(now / 1000)
  else
    local tm = redis.call('TIME')
    SLOTNOW = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  end
  redis.call('ZREMRANGEBYSCORE', SLOT[1], '-inf', SLOTNOW)
  HELD = redis.call('ZCARD', SLOT[1])
  if HELD >= SLOT[2] then
    FULL = true
    out = {-1, HELD}
  end
end
if BANNED or FULL or #KEYS ~= 1 or mode == '2' then mode = 'b' end
-- extra:end

-- The lean decision. Anything it cannot read (a log, another type or
-- rule, a bad value, a total that outgrows its width) falls through to
-- the general path, which decides from the start with the same
-- arithmetic: nothing has been written yet. Every call runs it, so it
-- calls few functions (each costs Redis about as much as 20 operations)
-- and passes Redis strings, not numbers, which it would format.
if lib and #KEYS == 1 and (mode == '0' or mode == '1' or mode == '2') then
  local sunpack, spack, key, t = lib.unpack, lib.pack, KEYS[1], now
  local alg, W, T, N, cost, shape = sunpack('<i1i8i8i8i8i8', ARGV[3])
  local m = W / T + 1
  local v, w, full = false, -1, false
  if alg ~= 3 then
    v = redis.pcall('GET', key)
    if not v then
      if cost < 256 then w = 1 elseif cost < 65536 then w = 2 else w = 6 end
    elseif #v >= 15 then -- a string: an error's table has no length
      -- The layout and the width by the length: lean, the cells end the
      -- value; full, the leased units and the generation follow them.
      -- A length both fit (m of 8 or fewer) is told by the stored shape's
      -- sign (shapeField is negative, a full key's negated). The shape
      -- itself is checked below.
      w = (#v - 15) / (m + 1)
      local f = (#v - 19) / (m + 2)
      if f >= 1 and f <= 6 and f % 1 == 0 then
        if w % 1 ~= 0 or w > 6 or string.byte(v, 8) < 128 then full, w = true, f end
      end
    end
  end
  -- The formats of the head with the total, of one integer, of two, of
  -- the span from the total to a cell (SETRANGE's argument), and of a new
  -- lean value (its one cell among zeros); a total's bound. (One
  -- assignment each: a multiple one moves its values twice.)
  local hf, cf, cf2, sf, nf, top
  if w == 1 then hf = '<i8i7I1' cf = '<I1' cf2 = '<I1I1' sf = '<I1c0I1' nf = '<i8i7I1c0I1c0' top = 256
  elseif w == 2 then hf = '<i8i7I2' cf = '<I2' cf2 = '<I2I2' sf = '<I2c0I2' nf = '<i8i7I2c0I2c0' top = 65536
  elseif w == 3 then hf = '<i8i7I3' cf = '<I3' cf2 = '<I3I3' sf = '<I3c0I3' nf = '<i8i7I3c0I3c0' top = 16777216
  elseif w == 4 then hf = '<i8i7I4' cf = '<I4' cf2 = '<I4I4' sf = '<I4c0I4' nf = '<i8i7I4c0I4c0' top = 4294967296
  elseif w == 5 then hf = '<i8i7I5' cf = '<I5' cf2 = '<I5I5' sf = '<I5c0I5' nf = '<i8i7I5c0I5c0' top = 1099511627776
  elseif w == 6 then hf = '<i8i7I6' cf = '<I6' cf2 = '<I6I6' sf = '<I6c0I6' nf = '<i8i7I6c0I6c0' top = 281474976710656
  else w = -1 end
  local newest, total = false, 0
  if w > 0 and v then
    local sh
    sh, newest, total = sunpack(hf, v)
    if full and sh ~= -shape or not full and sh ~= shape then w = -1 end -- another rule's
    if newest * T >= 9007199254740992 then w = -1 end -- see load
  end
  if w > 0 then
    local reach = m
    if alg == 1 then reach = 1 end
    local c = (t - t % T) / T
    if newest and c < newest then
      c = newest -- the clock went back: stay in the newest sub-window
      t = c * T
    end
    -- The cells of sub-windows c-m+1.. are reused from c on: theirs leave
    -- the total. The leaving sub-window c-k is still stored, in the cell
    -- after the request's (read with it). Without a key, gap is m.
    local base, gap, slot = 16 + w, m, c % m
    local p, cell, leaving = base + w * slot, 0, 0
    if newest then
      gap = c - newest
      if gap >= m then
        total = 0
      else
        if gap > 0 then
          for b = newest + 1, c do total = total - sunpack(cf, v, base + w * (b % m)) end
        end
        if slot < m - 1 then
          cell, leaving = sunpack(cf2, v, p)
        else
          cell, leaving = sunpack(cf, v, p), sunpack(cf, v, base)
        end
      end
    end
    local whole = total - leaving
    if alg == 0 then
      local x = leaving * ((c + 1) * T - t)
      local q = (x - x % T) / T
      if x % T > 0 then q = q + 1 end
      whole = whole + q
    elseif alg == 2 then
      whole = whole + leaving
    end
    if whole + cost <= N then
      -- A lease adds g units to the request's own cost: at most half of
      -- what is left once the request is counted.
      local g = 0
      if mode == '2' then
        g = math.floor((N - cost - whole) / 2)
        local B = sunpack('<i8', ARGV[3], 42)
        if g > B then g = B end
      end
      local add = cost + g
      local nt = total + add
      if nt < top then
        -- A receipt names the key's generation: a lean key becomes full.
        local keep = full or mode == '0'
        local generation = 0
        if full and (mode ~= '0' or gap ~= 0) then
          generation = sunpack('<I4', v, #v - 3)
        elseif not full and mode ~= '0' then
          generation = now -- born now (see born)
          if ARGV[1] ~= '0' then
            local tm = redis.call('TIME')
            generation = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
          end
          generation = generation % 4294967296
          if generation == 0 then generation = 1 end
        end
        local r
        if gap == 0 and keep then
          -- The total and the request's cell in place (and a full key's
          -- leased units, after the cells); the expiry stays.
          local span = spack(sf, nt, string.sub(v, base, p - 1), cell + add)
          if g > 0 then
            local lp = base + w * m
            span = span .. string.sub(v, p + w, lp - 1) .. spack(cf, sunpack(cf, v, lp) + g)
          end
          -- The key's length, which it keeps, or a refusal (below).
          r = redis.pcall('SETRANGE', key, '15', span)
          if r == #v then r = nil end
        else
          -- The whole value: a new key, a new sub-window (its cell and
          -- those it reuses emptied), or a lean key made full.
          local nv
          if gap >= m and keep and not full then
            nv = spack(nf, shape, c, nt, string.rep('\0', w * slot), add, string.rep('\0', w * (m - 1 - slot)))
          else
            local cells
            if gap >= m then
              cells = string.rep('\0', w * slot) .. spack(cf, add) .. string.rep('\0', w * (m - 1 - slot))
            elseif gap == 0 then
              cells = string.sub(v, base, p - 1) .. spack(cf, cell + add) .. string.sub(v, p + w, base + w * m - 1)
            else
              local a = (newest + 1) % m -- the first cell reused; slot is the last
              if a <= slot then
                cells = string.sub(v, base, base + w * a - 1) .. string.rep('\0', w * (slot - a)) .. spack(cf, add) .. string.sub(v, p + w, base + w * m - 1)
              else
                cells = string.rep('\0', w * slot) .. spack(cf, add) .. string.sub(v, p + w, base + w * a - 1) .. string.rep('\0', w * (m - a))
              end
            end
            if keep and not full then
              nv = spack(hf, shape, c, nt) .. cells
            else
              -- What leases took of sub-window c: g, as a new sub-window's
              -- or a lean key's leased units are none.
              nv = spack(hf, -shape, c, nt) .. cells .. spack(cf, g) .. spack('<I4', generation)
            end
          end
          -- From the clock, not from t: a clock that went back is
          -- clamped to sub-window c, which stops counting no sooner. In
          -- whole milliseconds, rounded up without a call of math.ceil.
          local ms = ((c + reach) * T - now + 999) / 1000
          r = redis.pcall('SET', key, nv, 'PX', ms - ms % 1 + 1)
          if r.ok then r = nil end -- else a refusal (below)
        end
        out = {1, N - add - whole, 0, (c + reach) * T - t}
        if mode == '1' then -- the receipt: the generation stamped with the last save (see stamp)
          local saved = redis.pcall('LASTSAVE')
          if type(saved) ~= 'number' then saved = 0 end
          out[5], out[6] = t, (generation + saved) % 4294967296
        elseif mode == '2' then
          out[5], out[6], out[7] = g, t, generation
        end
        if r and type(r) == 'table' and r.err then
          -- The script's first write: Redis over its maxmemory refuses it
          -- (see refused below), and nothing was written.
          if not string.find(r.err, 'OOM', 1, true) then error(r.err) end
          if mode == '1' then out[5], out[6] = 0, 0 end
          if mode == '2' then
            if not full then generation = NOGENERATION end
            if not v then generation = 0 end
            out[2], out[5], out[6], out[7] = N - cost - whole, 0, 0, generation
          end
          out[#out + 1] = 1 -- admitted but not counted: out of memory
        end
      end
    else
      -- Denied: nothing is written. Retry-after walks the sub-windows to
      -- come until the count falls enough; reset-after finds the newest
      -- sub-window that still counts. Step j of the walk runs from start
      -- to e; the sub-window leaving in it, b = c-k+j, is the key's while
      -- j <= held (b <= newest, as c >= newest, and b > newest-m); none
      -- without a key (gap is m). Its cell is cs[i] (the cells in one
      -- read: cs[b % m + 1]), and l its count, which weighs in windows of
      -- more than one sub-window.
      local k, need, sum = m - 1, N - cost, total - leaving
      local held, cs = k - gap, nil
      if held >= 0 then cs = {sunpack(string.rep(cf, m), v, base)} end
      local i, l = (c - k) % m + 1, 0
      if held >= 0 and reach > 1 then l = cs[i] end
      local retry, start, e = (c + reach) * T - t, t, (c + 1) * T
      for j = 0, k do
        if l == 0 or alg ~= 0 then
          if sum + l <= need then retry = start - t break end
        else
          local x = l * (e - start)
          local q = (x - x % T) / T
          if x % T > 0 then q = q + 1 end
          if sum + q <= need then retry = start - t break end
          if sum <= need then
            -- The first instant at which l*(end-x)/T <= need-sum.
            local y = (need - sum) * T
            local at = e - t - (y - y % l) / l
            if at < start - t then at = start - t end
            retry = at break
          end
        end
        l = 0
        if j < held then
          i = i % m + 1
          sum = sum - cs[i]
          if reach > 1 then l = cs[i] end
        end
        start, e = e, e + T
      end
      -- From the newest sub-window, c-gap (below c-reach+1 when the key
      -- holds none that counts).
      local reset = 0
      for b = c - gap, c - reach + 1, -1 do
        if cs[b % m + 1] ~= 0 then reset = (b + reach) * T - t break end
      end
      local remaining = N - whole
      if remaining < 0 then remaining = 0 end
      out = {0, remaining, retry, reset}
      if mode == '1' then
        out[5], out[6] = 0, 0
      elseif mode == '2' then
        out[5], out[6], out[7] = 0, 0, 0
        if full then out[7] = sunpack('<I4', v, #v - 3) elseif v then out[7] = NOGENERATION end
      end
    end
  end
end

-- extra:begin
-- The ban of a lean decision (see ban below): a refusal starts it, and
-- the integer after take's four says so.
if out and not BANNED and not FULL and BANS[1] then
  local started = 0
  if out[1] == 0 then
    local b = BANS[1]
    redis.pcall('SET', b[1], string.format('%.0f', now + b[2]), 'PX', math.ceil(b[2] / 1000) + 1)
    out[2], out[3], out[4], started = 0, b[2], b[2], 1
  end
  table.insert(out, 5, started)
end
-- extra:end

-- The lean refund: one reservation of a bucket key given back in place, the
-- receipt's cell and the total, with refundBuckets's conditions. A receipt
-- of another generation, or of a key that is gone or not of this rule, gets
-- nothing back, as on the general path; a lease's give-back takes the
-- general path.
if mode == '3' and lib and #KEYS == 1 then
  local sunpack, spack, key = lib.unpack, lib.pack, KEYS[1]
  local alg, W, T, _, cost, shape, at, generation, granted = sunpack('<i1i8i8i8i8i8i8i8i8i8', ARGV[3])
  if alg ~= 3 and granted == 0 then
    out = {0}
    local v = redis.pcall('GET', key)
    local m = W / T + 1
    local w, cf = 0, false
    if type(v) == 'string' then w = (#v - 19) / (m + 2) end
    if w == 1 then cf = '<I1' elseif w == 2 then cf = '<I2' elseif w == 3 then cf = '<I3'
    elseif w == 4 then cf = '<I4' elseif w == 5 then cf = '<I5' elseif w == 6 then cf = '<I6' end
    local sh, newest, total = 0, 0, 0
    if cf then sh, newest, total = sunpack('<i8i7' .. string.sub(cf, 2), v) end
    if cf and sh == -shape and newest * T < 9007199254740992 then
      local saved = redis.pcall('LASTSAVE') -- see stamp
      if type(saved) ~= 'number' then saved = 0 end
      if (sunpack('<I4', v, #v - 3) + saved) % 4294967296 == generation then
        local reach, b = m, math.floor(at / T)
        if alg == 1 then reach = 1 end
        if cost > 0 and b <= newest and b > newest - reach then
          local p = 16 + w * (1 + b % m)
          local x = sunpack(cf, v, p)
          if x >= cost and (reach == 1 and x == cost or total == cost) then
            redis.call('DEL', key) -- it would count nothing (see refundBuckets)
            out[1] = 1
          elseif x >= cost then
            local span = spack(cf, total - cost)
            if p > 16 + w then span = span .. string.sub(v, 16 + w, p - 1) end
            local r = redis.pcall('SETRANGE', key, '15', span .. spack(cf, x - cost))
            if type(r) ~= 'table' then out[1] = 1 end
          end
        end
      end
    end
  end
end

if out == nil then
local floor, ceil = math.floor, math.ceil
local function fmt(x) return string.format('%.0f', x) end

-- Redis has the struct library; miniredis, the tests' in-process Redis,
-- does not: there the same little-endian integers are packed in Lua.
local spack, sunpack
if lib then
  spack, sunpack = lib.pack, lib.unpack
else
  local byte, char = string.byte, string.char
  sunpack = function(f, s, pos)
    pos = pos or 1
    local out = {}
    for kind, n in string.gmatch(f, '([iI])(%d+)') do
      n = tonumber(n)
      local x, neg = 0, kind == 'i' and byte(s, pos + n - 1) >= 128
      for j = pos + n - 1, pos, -1 do
        local b = byte(s, j)
        if neg then b = 255 - b end
        x = x * 256 + b
      end
      if neg then x = -x - 1 end
      out[#out + 1] = x
      pos = pos + n
    end
    out[#out + 1] = pos
    return unpack(out)
  end
  spack = function(f, ...)
    local args, parts, a = {...}, {}, 1
    for _, n in string.gmatch(f, '([iI])(%d+)') do
      local x, neg = args[a], args[a] < 0
      if neg then x = -x - 1 end
      for _ = 1, tonumber(n) do
        local b = x % 256
        if neg then b = 255 - b end
        parts[#parts + 1] = char(b)
        x = (x - x % 256) / 256
      end
      a = a + 1
    end
    return table.concat(parts)
  end
end

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

-- The general path reads and writes bucket keys as the lean paths do.
local head = 16 -- the total's position; the cells follow it

-- cellFormat is the struct format of an integer of w bytes.
local function cellFormat(w)
  if w == 1 then return '<I1' elseif w == 2 then return '<I2' elseif w == 3 then return '<I3'
  elseif w == 4 then return '<I4' elseif w == 5 then return '<I5' end
  return '<I6'
end

-- width returns the bytes a total of x takes.
local function width(x)
  if x < 256 then return 1 elseif x < 65536 then return 2 elseif x < 16777216 then return 3
  elseif x < 4294967296 then return 4 elseif x < 1099511627776 then return 5 end
  return 6
end

-- The bucket key being decided, as the decision leaves it for its commit:
-- locals rather than a table, so that a request of one item allocates none.
-- V is the stored value (false if none or unusable), CW and CF the width
-- and format of its integers, NEWEST the newest sub-window it holds (false
-- if none), TOTAL its count from sub-window C-k on (the cells of older ones
-- are gone at C), C the request's sub-window and TM its time, clamped to C
-- when the clock went back. REWRITE says the key must be written whole
-- (absent, of another rule or another type, or a hash of an earlier
-- version). LEAN says it has the lean layout (see the head). LEASED is what
-- leases took of sub-window NEWEST and did not give back: units instances
-- may still be spending. GENERATION names a full key's count: its birth
-- time, kept through every write, new when the key is made full (false
-- until then), so that a receipt of a count that was reset or lost is never
-- given back from the next one; an operator's reset gives the next
-- generation GENERATION + 1 (see nextGeneration). FOREIGN says the key
-- holds another rule's value or type.
local V, CW, CF, NEWEST, TOTAL, C, TM, REWRITE, GENERATION, FOREIGN, LEASED, LEAN = false, 0, '', false, 0, 0, 0, false, false, false, 0, false

-- nextGeneration returns the generation an operator's reset gives after
-- generation x.
local function nextGeneration(x)
  if x >= 4294967295 then return 1 end
  return x + 1
end

-- stamp returns what a reservation's receipt names as the generation of a
-- key of generation x: x plus the server's LASTSAVE, modulo 2^32. A Redis
-- that comes back with an older copy of the key (a restart from its last
-- RDB save or from its AOF, a failover to a replica that missed writes)
-- keeps the key's generation, but not the reservations counted after the
-- copy: their refunds must not come off it. Such a Redis has another
-- LASTSAVE (a restart sets it to its start; a replica has its own), so the
-- receipts of before name another generation, and their counts stay. So
-- does that of a request in flight across a save (BGSAVE), which errs on
-- the safe side. Not told apart: a restart within the second of the save it
-- restarts from. miniredis has no LASTSAVE: 0.
local SAVED = false
local function stamp(x)
  if not SAVED then
    SAVED = redis.pcall('LASTSAVE')
    if type(SAVED) ~= 'number' then SAVED = 0 end
  end
  return (x + SAVED) % 4294967296
end

-- born returns the generation of a key created now, or of a log's
-- reservation (see commitLog): the server's time in microseconds, modulo
-- 2^32 (never 0, which names no generation). Two generations of one key
-- share it once in 2^32 resets (reservations) at most.
local function born()
  local t = now
  if ARGV[1] ~= '0' then
    local tm = redis.call('TIME') -- now is the caller's: it may repeat
    t = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
  end
  t = t % 4294967296
  if t == 0 then t = 1 end
  return t
end

-- cell returns the stored count of sub-window b, for a ring of m cells.
local function cell(b, m)
  if not NEWEST or b > NEWEST or b <= NEWEST - m then return 0 end
  return (sunpack(CF, V, head + CW * (1 + b % m)))
end

-- fromHash reads a hash written by the previous version of this script
-- (one field per cell and the shape field holding the newest index) as a
-- value of today's layout, so that an upgrade keeps the counts; nil if
-- the hash is another rule's.
local function fromHash(key, shape, m)
  local h = redis.call('HGETALL', key)
  local newest, cells, total = nil, {}, 0
  for j = 1, #h, 2 do
    local f, x = tonumber(h[j]), tonumber(h[j + 1])
    if f == shape then
      newest = x
    elseif f == nil or f < 0 or f >= m or x == nil then
      return nil
    else
      cells[f + 1] = x
      total = total + x
    end
  end
  if newest == nil then return nil end
  for j = 1, m do cells[j] = cells[j] or 0 end
  return spack('<i8i7' .. string.rep(string.sub(cellFormat(width(total)), 2), m + 1), shape, newest, total, unpack(cells))
end

-- load reads the bucket key into V, CW, CF, NEWEST, TOTAL, LEASED,
-- GENERATION and LEAN, in either layout (see the head); a hash of an
-- earlier version is read as a lean value.
local function load(key, shape, m, T)
  V, NEWEST, TOTAL, REWRITE, GENERATION, FOREIGN, LEASED, LEAN = false, false, 0, true, false, true, 0, false
  local v, converted = redis.pcall('GET', key), false
  if type(v) == 'table' then
    -- Another type: a hash of the previous version, or a log's sorted set.
    if v.err and string.find(v.err, 'WRONGTYPE', 1, true) and redis.call('TYPE', key).ok == 'hash' then
      v, converted = fromHash(key, shape, m), true
    end
    if type(v) ~= 'string' then return end
  end
  if not v then FOREIGN = false return end
  if #v < 15 then return end
  local sh, newest = sunpack('<i8i7', v)
  local generation, size, ints = false, head - 1, m + 1
  if sh == -shape then
    size, ints = size + 4, m + 2
    generation = sunpack('<I4', v, #v - 3)
  elseif sh ~= shape then
    return
  end
  local w = (#v - size) / ints
  if w < 1 or w > 6 or w ~= floor(w) then return end
  -- A newest sub-window past the clock's 2^53 microseconds is no count
  -- of ours (a corrupt or hostile value): doubles do not count in ones
  -- there, and the loops over sub-windows would never end.
  if newest * T >= 9007199254740992 then return end
  local f = cellFormat(w)
  if generation then LEASED = sunpack(f, v, head + w * (m + 1)) end
  V, CW, CF, NEWEST, TOTAL, REWRITE, GENERATION, FOREIGN, LEAN = v, w, f, newest, (sunpack(f, v, head)), converted, generation, false, not generation
end

local function buckets(key, alg, W, T, N, cost, shape, t)
  local k = W / T
  local m = k + 1
  local reach = m
  if alg == 1 then reach = 1 end
  load(key, shape, m, T)
  local c = floor(t / T)
  if NEWEST and c < NEWEST then
    c = NEWEST -- the clock went back: stay in the newest sub-window
    t = c * T
  end
  C, TM = c, t
  -- At c the cells of sub-windows NEWEST-k..c-k-1 are gone.
  local total = TOTAL
  if NEWEST and c > NEWEST then
    if c - NEWEST >= m then
      total = 0
    else
      for b = NEWEST - k, c - k - 1 do total = total - cell(b, m) end
    end
  end
  TOTAL = total
  -- The window's sub-windows c-k+1..c, and the one leaving it.
  local leaving = cell(c - k, m)
  local sum = total - leaving
  -- whole is the count rounded up: the sub-windows inside plus the
  -- leaving one, weighted (sliding) or whole (strict).
  local whole = sum
  if alg == 0 then
    whole = whole + ceilDiv(leaving * ((c + 1) * T - t), T)
  elseif alg == 2 then
    whole = whole + leaving
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
    if reach > 1 then leaving = cell(cj - k, m) else leaving = 0 end
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
    if j < k then sum = sum - cell(cj - k + 1, m) end
  end
  local reset = 0
  for b = c, c - reach + 1, -1 do
    if cell(b, m) ~= 0 then reset = (b + reach) * T - t break end
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

-- commitBuckets counts cost in sub-window into (the request's, C, but for
-- a charge) of the key load and buckets left in V..LEAN, lease of them
-- leased; it reports true if Redis refused it. A plain take (lean) keeps
-- a lean or new key lean; anything else makes it full.
local function commitBuckets(key, T, cost, shape, m, reach, guard, into, lease, lean)
  local c, total = C, TOTAL + cost
  local slot = c % m
  lean = lean and (LEAN or not V)
  if not REWRITE and c == NEWEST and into == c and width(total) == CW and lean == LEAN then
    -- The common case: the total and the request's cell, in place (and
    -- the leased units, after the cells). The key's expiry stays: it is
    -- that of sub-window c.
    local p = head + CW * (1 + slot)
    local cur = sunpack(CF, V, p) + cost
    local span = spack(CF, total)
    if p > head + CW then span = span .. string.sub(V, head + CW, p - 1) end
    span = span .. spack(CF, cur)
    if lease > 0 then
      local lp = head + CW * (m + 1)
      span = span .. string.sub(V, p + CW, lp - 1) .. spack(CF, LEASED + lease)
    end
    return write(guard, 'SETRANGE', key, head - 1, span)
  end
  -- Write the key whole: a new sub-window (its cell and those it reuses
  -- emptied), a wider total, or a key that held nothing usable. It
  -- expires when its newest sub-window stops counting; within the same
  -- sub-window the expiry stays.
  local cells = {}
  for j = 0, m - 1 do cells[j + 1] = 0 end
  if NEWEST then
    for b = c - m + 1, c do cells[b % m + 1] = cell(b, m) end
  end
  cells[into % m + 1] = cells[into % m + 1] + cost
  -- What leases took of c: none yet in a new sub-window.
  local leased = lease
  if NEWEST and c == NEWEST then leased = leased + LEASED end
  cells[m + 1] = leased
  local w = width(total)
  local v
  if lean then
    v = spack('<i8i7' .. string.rep(string.sub(cellFormat(w), 2), m + 1), shape, c, total, unpack(cells, 1, m))
  else
    GENERATION = GENERATION or born()
    v = spack('<i8i7' .. string.rep(string.sub(cellFormat(w), 2), m + 2), -shape, c, total, unpack(cells))
    v = v .. spack('<I4', GENERATION)
  end
  if NEWEST and c == NEWEST and not REWRITE then
    return write(guard, 'SET', key, v, 'KEEPTTL')
  end
  return write(guard, 'SET', key, v, 'PX', ceil(((c + reach) * T - now) / 1000) + 1) -- see the lean path
end

-- full asks, for a commit that must delete first, whether Redis refuses
-- writes for memory: SETRANGE with nothing to write uses memory but
-- changes no key (a key of another type answers WRONGTYPE, ignored).
local function full(key)
  local r = redis.pcall('SETRANGE', key, 0, '')
  return type(r) == 'table' and r.err ~= nil and string.find(r.err, 'OOM', 1, true) ~= nil
end

local function logTake(s, key, W, N, cost, t)
  s.W, s.cost = W, cost
  local top = redis.pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  local n, old = 0, 0
  if top.err then
    s.stale = true
  elseif #top > 0 then
    local newest = tonumber(top[2])
    s.same = newest >= t -- the request counts at the newest score
    if newest > t then t = newest end
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

-- commitLog counts the request, a reservation's entries named after its
-- receipt's generation g (0 for a plain take); it reports true if Redis
-- refused it.
local function commitLog(s, key, guard, g)
  if s.stale then
    if guard and full(key) then return true end
    redis.call('DEL', key)
    s.n, s.old = 0, 0
  end
  local ts = fmt(s.t)
  -- Members are named after the count, and after those already at this
  -- time: a refund of an older entry lowers the count below their names,
  -- and ZADD of a name that is there would count nothing.
  local n = s.n
  if s.same then
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, ts, ts)) do
      local x = tonumber(string.match(m, '^[^.]*%.(%d+)'))
      if x and x > n then n = x end
    end
  end
  -- A reservation's names end with ':' and its generation (4 bytes, as a
  -- bucket key's), which no other request's name holds (see refundLog).
  local tail = ''
  if g ~= 0 then tail = ':' .. spack('<I4', g) end
  local add = {}
  for i = 1, s.cost do
    add[#add + 1] = ts
    add[#add + 1] = ts .. '.' .. (n + i) .. tail
  end
  if write(guard, 'ZADD', key, unpack(add)) then return true end
  if s.old > 0 then redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(s.t - s.W)) end
  redis.call('PEXPIRE', key, ceil(s.W / 1000) + 1)
  return false
end

-- extra:begin
-- ban applies to the decision of an item its zone's ban b, {the ban key,
-- the ban in µs}: a key banned at now is refused until the ban ends (the
-- ban key's value, in µs on the script's clock), whatever its window
-- says, and a key its window refuses is banned from now. The fifth
-- integer is 1 when this request started the ban. A ban is written even
-- though the request is refused; Redis over its maxmemory refuses that
-- write, and the key is then refused by its window alone.
local function ban(b, ok, remaining, retry, reset)
  local v = tonumber(redis.pcall('GET', b[1]))
  if v and v > now then
    return 0, 0, v - now, v - now, 0
  end
  if ok == 1 then return ok, remaining, retry, reset, 0 end
  redis.pcall('SET', b[1], fmt(now + b[2]), 'PX', ceil(b[2] / 1000) + 1)
  return 0, 0, b[2], b[2], 1
end
-- extra:end

-- decide decides every item and counts the request; it returns the reply.
-- Item i's arguments are ARGV[2i] (its mode) and ARGV[2i+1] (its rule).
local function decide()
  local res, states, rules, receipts, leases, all = {}, {}, {}, {}, {}, true
  for i = 1, #KEYS do
    local mode, rule = ARGV[2 * i], {sunpack('<i1i8i8i8i8i8', ARGV[2 * i + 1])}
    rules[i] = rule
    local alg, W, T, N, cost, shape = rule[1], rule[2], rule[3], rule[4], rule[5], rule[6]
    local ok, remaining, retry, reset
    if alg == 3 then
      local s = {t = 0, stale = false, same = false, W = 0, n = 0, old = 0, cost = 0}
      ok, remaining, retry, reset = logTake(s, KEYS[i], W, N, cost, now)
      states[i] = s
    else
      ok, remaining, retry, reset = buckets(KEYS[i], alg, W, T, N, cost, shape, now)
      states[i] = {V, CW, CF, NEWEST, TOTAL, C, TM, REWRITE, GENERATION, LEASED, LEAN}
    end
    -- extra:begin
    local started = 0
    if BANS[i] then ok, remaining, retry, reset, started = ban(BANS[i], ok, remaining, retry, reset) end
    -- extra:end
    if ok == 0 then all = false end
    res[#res + 1] = ok
    res[#res + 1] = remaining
    res[#res + 1] = retry
    res[#res + 1] = reset
    -- extra:begin
    if BANS[i] then res[#res + 1] = started end
    -- extra:end
    if mode == '1' then
      res[#res + 1] = 0 -- the receipt and its generation, once counted
      res[#res + 1] = 0
      receipts[i] = #res - 1
    elseif mode == '2' then
      res[#res + 1] = 0 -- the units granted and their time, once counted
      res[#res + 1] = 0
      -- The key's generation, even denied: none for a log or no key.
      if alg == 3 or not V then res[#res + 1] = 0 else res[#res + 1] = GENERATION or NOGENERATION end
      leases[i] = #res - 2
    end
  end
  -- The first write of the call is the one Redis may refuse for memory.
  local first = true
  for i = 1, #KEYS do
    if all then
      local s, rule, oom, g, gen = states[i], rules[i], false, 0, 0
      if rule[1] == 3 then
        if receipts[i] then gen = born() end
        oom = commitLog(s, KEYS[i], first, gen)
      else
        V, CW, CF, NEWEST, TOTAL, C, TM, REWRITE, GENERATION, LEASED, LEAN = unpack(s, 1, 11)
        local m = rule[2] / rule[3] + 1
        local reach = m
        if rule[1] == 1 then reach = 1 end
        if leases[i] then
          -- At most half of what is left once the request is counted.
          local left = res[leases[i] - 3]
          g = floorDiv(left, 2)
          local B = sunpack('<i8', ARGV[2 * i + 1], 42)
          if g > B then g = B end
        end
        oom = commitBuckets(KEYS[i], rule[3], rule[5] + g, rule[6], m, reach, first, C, g, ARGV[2 * i] == '0')
      end
      first = false
      if oom then
        res[#res + 1] = 1 -- admitted but not counted: out of memory
        break
      end
      if receipts[i] then
        -- A log's receipt names its entries: their score, the time they
        -- were counted at, and the generation their names end with.
        if rule[1] == 3 then res[receipts[i]], res[receipts[i] + 1] = s.t, gen else res[receipts[i]], res[receipts[i] + 1] = TM, stamp(GENERATION) end
      end
      if leases[i] then
        res[leases[i] + 2] = GENERATION
        if g > 0 then
          res[leases[i] - 3] = res[leases[i] - 3] - g
          res[leases[i]], res[leases[i] + 1] = g, TM
        end
      end
    end
  end
  return res
end

-- charge counts units in the sub-window of time at of the key load left in
-- V..FOREIGN, which is not the generation a lease of those units was
-- granted in: an operator reset the key, or Redis lost it, while an
-- instance held the lease and spent from it. Units spent after the reset
-- were admitted in the window that the new generation counts, so the new
-- generation counts them, with the ones spent before it (the safe side), if
-- their sub-window still counts. It returns 2 if it counted them.
local function charge(key, T, units, shape, m, reach, at)
  if not now then
    local tm = redis.call('TIME') -- a refund's call has not read it (see now)
    now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
  end
  local c = floor(now / T)
  if NEWEST and c < NEWEST then c = NEWEST end
  local b = floor(at / T)
  -- A server clock that went back since the grant: the units were spent
  -- in what is now the newest sub-window.
  if b > c then b = c end
  if b <= c - reach then return 0 end
  local total = TOTAL
  if NEWEST and c > NEWEST then
    if c - NEWEST >= m then
      total = 0
    else
      for x = NEWEST - m + 1, c - m do total = total - cell(x, m) end
    end
  end
  local t = now
  if t < c * T then t = c * T end
  C, TM, TOTAL = c, t, total
  if commitBuckets(key, T, units, shape, m, reach, true, b, 0, false) then return 0 end
  return 2
end

-- refundBuckets takes cost back from the sub-window of time at in a bucket
-- key, if the key still holds that sub-window and as much in it, in the
-- generation the receipt names; it returns 1 if it did. Only that cell and
-- the total change, in place, and the key's expiry stays; a key left
-- counting nothing (in the sub-windows that count from its newest on) is
-- deleted. A lease's give-back (granted > 0: of granted units, cost are
-- unspent and confirmed were spent before a reply last found the key in
-- generation) to another generation counts the units spent since instead
-- (see charge); a reservation's count gets nothing.
local function refundBuckets(key, alg, W, T, cost, shape, at, generation, granted, confirmed)
  local m = W / T + 1
  load(key, shape, m, T)
  local reach = m
  if alg == 1 then reach = 1 end
  local own = GENERATION -- the generation a receipt of this key names
  if granted == 0 and GENERATION then own = stamp(GENERATION) end -- a reservation's
  local keptAcrossReset = granted > 0 and GENERATION and GENERATION ~= generation and GENERATION == nextGeneration(generation)
  if not V or REWRITE or own ~= generation and not keptAcrossReset then
    local spent = granted - confirmed - cost
    if granted > 0 and spent > 0 and not FOREIGN then return charge(key, T, spent, shape, m, reach, at) end
    return 0
  end
  if keptAcrossReset then
    -- An operator's reset kept the lease's units counted in this generation
    -- (see reset): those spent before it, as far as the holder knows, come
    -- back with the unspent ones.
    cost = cost + confirmed
  end
  if cost <= 0 then return 0 end
  local b = floor(at / T)
  if b > NEWEST or b <= NEWEST - reach then return 0 end
  local p = head + CW * (1 + b % m)
  local x = sunpack(CF, V, p)
  if x < cost then return 0 end
  if reach == 1 and x == cost or TOTAL == cost then
    -- The key would count nothing: it goes, as a log's does with its
    -- last entry, so that a request after a clock step back counts at
    -- its own time, as in the zone, rather than in this sub-window.
    redis.call('DEL', key)
    return 1
  end
  local span = spack(CF, TOTAL - cost)
  if p > head + CW then span = span .. string.sub(V, head + CW, p - 1) end
  span = span .. spack(CF, x - cost)
  if granted > 0 and b == NEWEST then
    -- Units a lease gives back are out no longer.
    local left, lp = LEASED - cost, head + CW * (m + 1)
    if left < 0 then left = 0 end
    span = span .. string.sub(V, p + CW, lp - 1) .. spack(CF, left)
  end
  local r = redis.pcall('SETRANGE', key, head - 1, span)
  if type(r) == 'table' and r.err then return 0 end
  return 1
end

-- reset is an operator's reset of the key KEYS[1], of the rule ARGV[3]: the
-- key starts a fresh count, its next generation. Units that leases took of
-- the current sub-window and did not give back may still be spent by the
-- instances that hold them, which do not know of the reset: the next
-- generation counts them from its start, so that it admits one fresh budget
-- and never more, and a lease that gives them back gives them back to it
-- (see refundBuckets). Those of the resetting instance's own lease, which
-- it ended (ARGV[3]'s last eight bytes), are not kept. It returns 1 if
-- there was a key.
local function reset()
  local key = KEYS[1]
  local alg, W, T, _, _, shape, own = sunpack('<i1i8i8i8i8i8i8', ARGV[3])
  if alg == 3 then return {redis.call('DEL', key)} end
  local m = W / T + 1
  load(key, shape, m, T)
  local c = floor(now / T)
  if NEWEST and c < NEWEST then c = NEWEST end
  local out = LEASED - own
  if not V or REWRITE or NEWEST ~= c or out <= 0 then return {redis.call('DEL', key)} end
  local reach = m
  if alg == 1 then reach = 1 end
  local cells = {}
  for j = 1, m do cells[j] = 0 end
  cells[c % m + 1], cells[m + 1] = out, out
  local t = now
  if t < c * T then t = c * T end
  local v = spack('<i8i7' .. string.rep(string.sub(cellFormat(width(out)), 2), m + 2), -shape, c, out, unpack(cells))
  redis.call('SET', key, v .. spack('<I4', nextGeneration(GENERATION)), 'PX', ceil(((c + reach) * T - now) / 1000) + 1)
  return {1}
end

-- refundLog removes cost members of score at from a log key, those whose
-- names end with the receipt's generation (see commitLog); it returns 1 if
-- it removed any. No other request names its members so, in this life of
-- the key or the next (see born), and a copy of the key that lost them
-- holds none: a receipt of before a reset or a loss finds nothing. A
-- receipt of generation 0, an earlier version's, takes members named
-- without one. It takes those named last: a later request at the same time
-- names its member after the count, which is then free again.
local function refundLog(key, at, cost, generation)
  local ms = redis.pcall('ZRANGEBYSCORE', key, fmt(at), fmt(at))
  if type(ms) ~= 'table' or ms.err or #ms == 0 then return 0 end
  local ns, found = {}, 0
  for j = 1, #ms do
    local m, n = ms[j], -1
    if generation == 0 then
      if not string.find(m, ':', 1, true) then n = tonumber(string.match(m, '%.(%d+)$')) or 0 end
    elseif string.byte(m, -5) == 58 and sunpack('<I4', m, #m - 3) == generation then -- ':'
      n = tonumber(string.match(m, '^[^.]*%.(%d+)')) or 0
    end
    ns[j] = n
  end
  for _ = 1, cost do
    local best = 0
    for j = 1, #ms do
      if ns[j] >= 0 and (best == 0 or ns[j] > ns[best]) then best = j end
    end
    if best == 0 then break end
    redis.call('ZREM', key, ms[best])
    ns[best], found = -1, 1
  end
  return found
end

-- refund gives back the reserved counts of a refund call.
local function refund()
  local res = {}
  for i = 1, #KEYS do
    local alg, W, T, _, cost, shape, at, generation, granted, confirmed = sunpack('<i1i8i8i8i8i8i8i8i8i8', ARGV[2 * i + 1])
    if alg == 3 then
      res[i] = refundLog(KEYS[i], at, cost, generation)
    else
      res[i] = refundBuckets(KEYS[i], alg, W, T, cost, shape, at, generation, granted, confirmed)
    end
  end
  return res
end

if ARGV[2] == '3' then
  out = refund()
elseif ARGV[2] == '4' then
  out = reset()
  -- extra:begin
  for _, b in pairs(BANS) do out[1] = out[1] + redis.call('DEL', b[1]) end
  if out[1] > 1 then out[1] = 1 end
  -- extra:end
else
  out = decide()
end
end
-- extra:begin
-- The slot of a request admitted and counted is taken last, in the same
-- atomic call as its count: the set cannot have filled since it was read.
if SLOT and not FULL then
  local want = 4
  if BANS[1] then want = want + 1 end
  if ARGV[2] == '1' then want = want + 2 elseif ARGV[2] == '2' then want = want + 3 end
  local took = 0
  if out[1] == 1 and #out == want then
    local r = redis.pcall('ZADD', SLOT[1], SLOTNOW + SLOT[3], SLOT[4])
    if type(r) ~= 'table' then
      redis.call('PEXPIRE', SLOT[1], SLOT[3])
      took = HELD + 1
    end
  end
  out[#out + 1] = took
end
-- extra:end
return out
