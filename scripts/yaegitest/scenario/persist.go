package scenario

import (
	"bytes"
	"fmt"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// restoreTwice: a snapshot of a restored zone holds the restored keys not
// seen again (read without the zone's locks, see persistState.unclaimed)
// and those seen again, so that two restarts in a row keep both counts.
func restoreTwice() error {
	rule := ratelimit.Rule{Window: time.Minute, Limit: 3}
	zones := make([]*ratelimit.Zone, 3)
	for i := range zones {
		z, err := ratelimit.NewZone("scenario", rule, ratelimit.Options{SweepInterval: -1, Persist: true})
		if err != nil {
			return err
		}
		defer z.Close()
		zones[i] = z
	}
	for i := 0; i < 3; i++ {
		ratelimit.TakeAt(zones[0], "a", epoch)
		ratelimit.TakeAt(zones[0], "b", epoch)
	}
	for i := 1; i < 3; i++ {
		var b bytes.Buffer
		if _, err := zones[i-1].Snapshot(&b, epoch); err != nil {
			return err
		}
		if _, err := zones[i].Restore(&b, epoch); err != nil {
			return err
		}
		if i == 1 {
			ratelimit.TakeAt(zones[1], "a", epoch) // claims a; b waits
			if n := zones[1].Stats().Pending; n != 1 {
				return fmt.Errorf("%d restored keys pending after a came back, want 1", n)
			}
		}
	}
	for _, k := range []string{"a", "b"} {
		if d := ratelimit.TakeAt(zones[2], k, epoch); d.Allowed {
			return fmt.Errorf("%s admitted after two restarts: %+v", k, d)
		}
	}
	return nil
}
