package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/windowlimit/windowlimit/shared/inflight"
)

// adminInFlightPrefix is the admin API's path of in-flight slots:
//
//   - GET /rate_limit_in_flight/<zone>/<key> returns how many slots the
//     key holds in each in-flight limiter of that zone name: in memory
//     this instance's, in Redis the fleet's.
//   - DELETE /rate_limit_in_flight/<zone>/<key> frees them all, in Redis
//     for every instance. The requests that held them run on to their end
//     without a slot, so up to in_flight more of the key may run beside
//     them until they end; their holders forget the slots at their next
//     renewal, and their releases free nothing of the slots taken since.
//
// The zone and key are path-escaped segments, as under /rate_limit/; an
// address key is grouped as the zone groups it.
const adminInFlightPrefix = "/rate_limit_in_flight/"

// slotState is what the admin API reports of a key's slots in one
// limiter.
type slotState struct {
	Zone     string `json:"zone"`
	Store    string `json:"store"`
	Key      string `json:"key"`
	InFlight int64  `json:"in_flight"`
	Held     int64  `json:"held"`
	Freed    *int64 `json:"freed,omitempty"`
	Note     string `json:"note,omitempty"`
}

const resetSlots = "freed: requests still running keep running without a slot, so up to in_flight more of the key may run beside them until they end"

func (adminAPI) serveInFlight(w http.ResponseWriter, r *http.Request) error {
	rest, _ := strings.CutPrefix(r.URL.EscapedPath(), adminInFlightPrefix)
	rawZone, rawKey, ok := strings.Cut(rest, "/")
	zone, err1 := url.PathUnescape(rawZone)
	key, err2 := url.PathUnescape(rawKey)
	if !ok || rawKey == "" || strings.Contains(rawKey, "/") || err1 != nil || err2 != nil {
		return apiError(http.StatusBadRequest, errors.New("want "+adminInFlightPrefix+"<zone>/<key>, each path-escaped (a slash as %2F)"))
	}
	if r.Method != http.MethodGet && r.Method != http.MethodDelete {
		return methodNotAllowed(w, http.MethodGet, http.MethodDelete)
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	var out []slotState
	seen := make(map[*inflight.Limiter]bool)
	handlers.Lock()
	var zones []*zoneState
	for h := range handlers.set {
		for _, z := range h.zones {
			if z.name == zone && z.inflight != nil && !seen[z.inflight] {
				seen[z.inflight] = true
				zones = append(zones, z)
			}
		}
	}
	handlers.Unlock()
	if len(zones) == 0 {
		return apiError(http.StatusNotFound, fmt.Errorf("no zone %q with in_flight", zone))
	}
	for _, z := range zones {
		k := z.key.mask(key)
		st := slotState{Zone: zone, Store: z.inflight.Store(), Key: k, InFlight: z.inflightN}
		var err error
		if r.Method == http.MethodDelete {
			var freed int64
			freed, err = z.inflight.Reset(ctx, k)
			st.Freed, st.Note = &freed, resetSlots
		} else {
			st.Held, err = z.inflight.Count(ctx, k)
		}
		if err != nil {
			return apiError(http.StatusBadGateway, fmt.Errorf("zone %q: in-flight slots: %w", zone, err))
		}
		out = append(out, st)
	}
	return writeJSON(w, out)
}
