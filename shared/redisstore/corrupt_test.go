package redisstore

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// TestRedisNewestPastFloats: a bucket key of the rule's shape whose
// newest sub-window index is past what a double counts in ones (2^53;
// the clock gives at most 2^51 microseconds today), whether a hostile or
// corrupt value or a hash of the previous version, is read as nothing
// usable and started afresh. Read as a sub-window, it sent the script's
// loops over sub-windows round for ever (b - 1 == b), blocking Redis.
func TestRedisNewestPastFloats(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, resp.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 2 * time.Second})
	store, err := New(c, Settings{KeyPrefix: "t:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20, Cost: 3}
	for i, kind := range []string{"string", "hash"} {
		z := newZone(t, "corrupt"+strconv.Itoa(i), r)
		rule := z.Rule()
		m := int(rule.Window/rule.SubWindow) + 1
		key := Key("t:", z.Name(), "k")
		const newest = 1 << 54
		switch kind {
		case "string":
			v := make([]byte, 15+m+1)
			binary.LittleEndian.PutUint64(v, uint64(shapeField(rule)))
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], newest)
			copy(v[8:15], b[:7])
			v[15] = 200 // the total, over the limit: a denial
			v[16] = 200
			srv.Do(t, "SET", key, string(v))
		case "hash":
			srv.Do(t, "HSET", key, strconv.FormatInt(shapeField(rule), 10), strconv.FormatInt(newest, 10), "0", "200")
		}
		for j := 0; j < 2; j++ {
			out := make([]ratelimit.Decision, 1)
			if _, err := store.Take(ctx, time.Now(), []ratelimit.Item{{Zone: z, Key: "k"}}, out); err != nil {
				t.Fatalf("%s: take %d: %v", kind, j, err)
			}
			if want := rule.Limit - rule.Cost*int64(j+1); !out[0].Allowed || out[0].Remaining != want {
				t.Fatalf("%s: take %d: %+v, want allowed with %d remaining (started afresh)", kind, j, out[0], want)
			}
		}
	}
}
