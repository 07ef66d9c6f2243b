package ratelimit

import (
	"hash/maphash"
	"strconv"
	"sync/atomic"
	"time"
)

// FieldBan is Options.Ban.
const FieldBan Field = "Ban"

// MaxBan bounds Options.Ban: a ban longer than a year is a block list,
// which belongs in the host's configuration, not in a rate limit.
const MaxBan = 365 * 24 * time.Hour

// checkBan reports a bad Options.Ban as a *FieldError.
func checkBan(ban time.Duration) error {
	if ban < 0 {
		return fieldError(FieldBan, "must be positive, got "+ban.String())
	}
	if ban > MaxBan {
		return fieldError(FieldBan, ban.String()+" is too long (at most "+MaxBan.String()+", a year)")
	}
	return nil
}

// Ban returns the zone's Options.Ban: how long a key that reaches its
// limit is refused, or 0 for a zone without bans.
func (z *Zone) Ban() time.Duration { return time.Duration(z.ban) }

// Bans returns how many bans the zone started in this process, in memory
// or through a remote store (see Zone.NoteBan).
func (z *Zone) Bans() uint64 { return atomic.LoadUint64(&z.bans) }

// NoteBan counts a ban that a remote store started on a key of z.
func (z *Zone) NoteBan() { atomic.AddUint64(&z.bans, 1) }

// TakeBanAt is TakeAt for a zone with a ban (Options.Ban), under limit (0:
// the rule's): a key banned at now is refused until its ban ends, whatever
// its window holds, and a key its window refuses is banned from now. Zones
// without a ban never come here from a host, and pay nothing for it; on
// one it decides as TakeAt does, written out as TakeAt is: the ban's
// lookup, then TakeAt's common case, then take.
//
// A function, not a method: interpreted, the method costs more (see the
// package documentation).
func TakeBanAt(z *Zone, key string, now time.Time, limit int64) Decision {
	t := now.UnixNano()
	if limit <= 0 {
		limit = z.ruleLimit
	}
	k := maphash.String(z.seed, key)
	s := z.shardOf[k&z.mask] // see TakeAt
	s.Lock()
	until := s.banned[k]
	if until == 0 && z.persist != nil {
		until = claimBan(z, s, key, k, t)
	}
	if t < until {
		s.Unlock()
		return Decision{Limit: limit, RetryAfter: duration(until - t), ResetAfter: duration(until - t)}
	}
	h := &s.heads[s.index[k]]
	if left := h.end - t; left > 0 && left <= z.span && limit == z.ruleLimit {
		if count := h.inside + h.leaving*float64(left)/z.spanF + z.cost; count <= z.limit {
			h.inside += z.cost
			s.Unlock()
			return Decision{Allowed: true, Limit: limit, Remaining: int64(z.limit - count), ResetAfter: duration(left + z.resetTail)}
		}
	}
	d := take(z, s, key, k, t, limit, true)
	if !d.Allowed {
		startBan(z, s, key, k, t, &d)
	}
	s.Unlock()
	return d
}

// banned reports whether the key hashed to k is banned at t in the locked
// shard s of a zone with a ban, and writes its denial, under limit, to d.
func banned(z *Zone, s *shard, key string, k uint64, t int64, limit int64, d *Decision) bool {
	until, ok := s.banned[k]
	if !ok {
		until = claimBan(z, s, key, k, t)
	}
	if t >= until {
		return false
	}
	*d = Decision{Limit: limit, RetryAfter: time.Duration(until - t), ResetAfter: time.Duration(until - t)}
	return true
}

// startBan bans the key hashed to k in the locked shard s from t, for the
// zone's ban, and makes d, the denial that found it at its limit, say
// so: nothing admits it before the ban ends. A shard holds at most as
// many bans as keys; a full one first deletes the bans that ended, and
// if none did, bans no one more until one does: a flood of keys at their
// limit never pushes out a ban, and a key it could not ban is still
// refused by its window.
func startBan(z *Zone, s *shard, key string, k uint64, t int64, d *Decision) {
	if z.ban <= 0 {
		return // a zone without a ban (TakeBanAt works for any zone)
	}
	if s.banned == nil {
		s.banned = make(map[uint64]int64)
	}
	if _, ok := s.banned[k]; !ok && len(s.banned) >= z.perShard && s.sweepBans(t) == 0 {
		return
	}
	s.banned[k] = t + z.ban
	if z.persist != nil {
		noteBanID(z, s, key, k)
	}
	atomic.AddUint64(&z.bans, 1)
	d.Remaining = 0
	d.RetryAfter = time.Duration(z.ban)
	d.ResetAfter = time.Duration(z.ban)
}

// sweepBans deletes the bans that ended at t and returns how many. The
// caller holds s locked.
func (s *shard) sweepBans(t int64) int {
	n := 0
	for k, until := range s.banned {
		if until <= t {
			delete(s.banned, k)
			delete(s.banIDs, k)
			n++
		}
	}
	return n
}

// banLeft returns how long key, hashed to k, stays banned at t in z, 0
// if it is not: a ban of its shard, or one restored and not claimed yet.
// The caller holds s locked.
func (s *shard) banLeft(z *Zone, key string, k uint64, t int64) time.Duration {
	until, ok := s.banned[k]
	if !ok && z.persist != nil {
		until = z.persist.restoredBan(z.persist.id(key))
	}
	if t < until {
		return time.Duration(until - t)
	}
	return 0
}

// banID returns what ZoneID adds for a zone's ban: nothing without one,
// so that the ID of every zone without a ban is what it always was.
func banID(ban time.Duration) string {
	if ban <= 0 {
		return ""
	}
	return " ban=" + strconv.FormatInt(int64(ban), 10)
}
