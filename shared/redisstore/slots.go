package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

//go:generate go test -run ^TestSlotsScriptSource$ -update-slots .

// slotsScript (slots_lua.go) is slots.lua, the script of in-flight slots.
// Its SHA1 is the name EVALSHA runs.
var slotsScriptSHA = scriptSHA(slotsScript)

// The modes of slots.lua.
const (
	slotsTake    = "0"
	slotsRelease = "1"
	slotsRenew   = "2"
	slotsCount   = "3"
	slotsReset   = "4"
)

// SlotsKey returns the Redis key of the set of in-flight slots of key in
// zone: the key of its counts (see Key) and ":slots". It shares the
// counts' hash tag, so both live in one Redis Cluster slot, and it never
// equals a key of counts, which ends with '}'.
func SlotsKey(prefix, zone, key string) string {
	return Key(prefix, zone, key) + ":slots"
}

// Slots takes, renews and releases in-flight slots in Redis: one sorted
// set per key (see slots.lua), shared by every instance. Each Slots names
// its slots with an id of its own and a counter, so that two instances
// never release each other's slots.
type Slots struct {
	run    ScriptRunner
	prefix string
	id     string
	seq    uint64 // atomic
}

// NewSlots returns the slots of keys under prefix, through run.
func NewSlots(run ScriptRunner, prefix string) (*Slots, error) {
	if run == nil {
		return nil, errors.New("redis slots: no script runner")
	}
	if err := checkKeyPrefix(prefix); err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("redis slots: holder id: %w", err)
	}
	return &Slots{run: run, prefix: prefix, id: hex.EncodeToString(b[:]) + ":"}, nil
}

// Key returns the Redis key of key's slots in zone.
func (s *Slots) Key(zone, key string) string { return SlotsKey(s.prefix, zone, key) }

// Take takes a slot of set if fewer than n are held, for ttl unless
// renewed. It returns the slot's member (empty when refused) and how many
// slots the set holds after the call.
func (s *Slots) Take(ctx context.Context, set string, n int64, ttl time.Duration) (member string, held int64, err error) {
	member = s.NewMember()
	res, err := s.eval(ctx, set, []string{slotsTake, strconv.FormatInt(n, 10), strconv.FormatInt(ttlMillis(ttl), 10), member})
	if err != nil {
		return "", 0, err
	}
	if len(res) != 2 {
		return "", 0, fmt.Errorf("redis slots: take: want 2 integers, got %d", len(res))
	}
	if res[0] != 1 {
		return "", res[1], nil
	}
	return member, res[1], nil
}

// Release frees members of set. Members that are gone are ignored.
func (s *Slots) Release(ctx context.Context, set string, members ...string) error {
	if len(members) == 0 {
		return nil
	}
	args := make([]string, 0, 1+len(members))
	args = append(append(args, slotsRelease), members...)
	_, err := s.eval(ctx, set, args)
	return err
}

// Renew extends members of set to ttl from now. alive[i] reports whether
// members[i] was still held: a slot that is gone (expired, reset) stays
// gone, and its holder should forget it.
func (s *Slots) Renew(ctx context.Context, set string, ttl time.Duration, members []string) (alive []bool, err error) {
	args := make([]string, 0, 2+len(members))
	args = append(append(args, slotsRenew, strconv.FormatInt(ttlMillis(ttl), 10)), members...)
	res, err := s.eval(ctx, set, args)
	if err != nil {
		return nil, err
	}
	if len(res) != len(members) {
		return nil, fmt.Errorf("redis slots: renew: want %d integers, got %d", len(members), len(res))
	}
	alive = make([]bool, len(res))
	for i, r := range res {
		alive[i] = r == 1
	}
	return alive, nil
}

// Held returns how many slots of set are held now, by every instance.
func (s *Slots) Held(ctx context.Context, set string) (int64, error) {
	return s.one(ctx, set, slotsCount)
}

// Reset frees every slot of set, whoever holds it, and returns how many
// there were. Requests still running keep running; their holders find
// their slots gone at the next renewal and forget them.
func (s *Slots) Reset(ctx context.Context, set string) (int64, error) {
	return s.one(ctx, set, slotsReset)
}

// one runs a mode whose reply is one integer.
func (s *Slots) one(ctx context.Context, set, mode string) (int64, error) {
	res, err := s.eval(ctx, set, []string{mode})
	if err != nil {
		return 0, err
	}
	if len(res) != 1 {
		return 0, fmt.Errorf("redis slots: want 1 integer, got %d", len(res))
	}
	return res[0], nil
}

// eval runs slots.lua on set by its SHA1, and sends its text when the
// server lost it.
func (s *Slots) eval(ctx context.Context, set string, args []string) ([]int64, error) {
	keys := []string{set}
	res, err := s.run.EvalSha(ctx, slotsScriptSHA, keys, args)
	if err != nil && isNoScript(err) {
		res, err = s.run.Eval(ctx, slotsScript, keys, args)
	}
	if err != nil {
		return nil, fmt.Errorf("redis slots script: %w", err)
	}
	return res, nil
}

// slotArg returns the script argument of a slot taken with a decision
// (see SLOT in script.lua).
func slotArg(s *ratelimit.Slot) string {
	return "s:" + strconv.FormatInt(s.N, 10) + ":" + strconv.FormatInt(ttlMillis(s.TTL), 10) + ":" + s.Member
}

// readSlot reads what a call that took slot with its decision replied
// about it (see SLOT in script.lua): {-1, held} when the set was full
// (full, and nothing else was decided), else the slots held with this
// one, 0 when it took none, as the last integer, which rest leaves out.
func readSlot(res []int64, slot *ratelimit.Slot) (rest []int64, full bool) {
	if len(res) == 2 && res[0] == -1 {
		slot.State, slot.Held = ratelimit.SlotFull, res[1]
		return nil, true
	}
	if len(res) == 0 {
		return res, false
	}
	if held := res[len(res)-1]; held > 0 {
		slot.State, slot.Held = ratelimit.SlotTaken, held
	}
	return res[:len(res)-1], false
}

// NewMember returns the name of a new slot of this holder.
func (s *Slots) NewMember() string {
	return s.id + strconv.FormatUint(atomic.AddUint64(&s.seq, 1), 36)
}

// ttlMillis returns ttl in whole milliseconds, at least 1.
func ttlMillis(ttl time.Duration) int64 {
	if ms := int64(ttl / time.Millisecond); ms > 1 {
		return ms
	}
	return 1
}
