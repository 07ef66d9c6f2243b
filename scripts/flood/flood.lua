-- wrk script of bench-flood.sh: every request carries a flood key that no
-- earlier request of this run carried, both as an X-K header (Caddy's zone
-- keys on it) and as the X-Forwarded-For address 10.x.y.z (Traefik's
-- ipStrategy.depth 1 keys on it), or, with PER > 1, each key on PER
-- consecutive requests of a thread before the next.
--
--   wrk -s flood.lua URL -- PER THREADS
--
-- Keys come from a counter, not from math.random: key i of thread t (of T)
-- has index c*T + t, and the address is that index times an odd constant
-- modulo 2^24 (a bijection, so distinct indexes give distinct addresses,
-- spread over 10.0.0.0/8). WL_FLOOD_NONCE (an integer) shifts both, so two
-- runs against one process do not share keys. done() regenerates every key
-- the threads made and prints how many were distinct.

local nonce = tonumber(os.getenv("WL_FLOOD_NONCE") or "0") or 0
local SPACE = 16777216 -- 2^24 addresses in 10.0.0.0/8
local MIX = 6017003    -- odd, below 2^24: products stay exact in a double

local function xk(index)
	return "f" .. nonce .. "-" .. index
end

local function xff(index)
	local a = (index * MIX + nonce) % SPACE
	return string.format("10.%d.%d.%d", math.floor(a / 65536), math.floor(a / 256) % 256, a % 256)
end

-- setup and done run in the main state; each thread has its own.
local threads = {}

function setup(thread)
	thread:set("id", #threads)
	table.insert(threads, thread)
end

function init(args)
	per = tonumber(args[1]) or 1
	nthreads = tonumber(args[2]) or 1
	sent = 0 -- requests built by this thread
	headers = {}
end

function request()
	local index = math.floor(sent / per) * nthreads + id
	sent = sent + 1
	headers["X-K"] = xk(index)
	headers["X-Forwarded-For"] = xff(index)
	return wrk.format(nil, nil, headers)
end

function done(summary)
	local requests, keys, seenK, seenA, distinctK, distinctA = 0, 0, {}, {}, 0, 0
	for _, thread in ipairs(threads) do
		local n, per, nthreads, id = thread:get("sent"), thread:get("per"), thread:get("nthreads"), thread:get("id")
		requests = requests + n
		for c = 0, math.ceil(n / per) - 1 do
			local index = c * nthreads + id
			keys = keys + 1
			local k, a = xk(index), xff(index)
			if not seenK[k] then seenK[k] = true; distinctK = distinctK + 1 end
			if not seenA[a] then seenA[a] = true; distinctA = distinctA + 1 end
		end
	end
	io.write(string.format("flood: built %d requests, %d keys, %d distinct X-K, %d distinct X-Forwarded-For\n",
		requests, keys, distinctK, distinctA))
end
