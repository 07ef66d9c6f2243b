package traefikplugin

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// storeLog receives Redis errors and recoveries: Traefik's ERROR level
// (see errorLog).
var storeLog = errorLog

// Redis clients and their guards live here, one per redis configuration,
// shared by every middleware that uses that configuration and reused
// across reloads. A configuration no middleware uses any more is closed,
// so reloads that change the redis block never pile up connections or
// probe goroutines.
var (
	redisMu sync.Mutex
	// redisByID maps redisSettings.id to its client and guard.
	redisByID = make(map[string]*sharedRedis)
	// redisOf maps a middleware name to the id of the redis it uses.
	redisOf = make(map[string]string)
)

// sharedRedis is one Redis client with the guard in front of its store.
type sharedRedis struct {
	client *resp.Client
	guard  *guard.Guard
	// users counts the middleware names using it.
	users int
}

// redisStoreFor returns the store of the middleware name for rs, or nil
// when rs is nil (the in-memory zone). It never dials.
func redisStoreFor(name string, rs *redisSettings) (ratelimit.Store, error) {
	redisMu.Lock()
	defer redisMu.Unlock()
	if rs == nil {
		releaseRedis(name)
		return nil, nil
	}
	sr := redisByID[rs.id]
	if sr == nil {
		var err error
		if sr, err = newSharedRedis(rs); err != nil {
			return nil, err
		}
		redisByID[rs.id] = sr
	}
	if redisOf[name] != rs.id {
		releaseRedis(name)
		redisOf[name] = rs.id
		sr.users++
	}
	return sr.guard, nil
}

// releaseRedis detaches name from its redis, closing it when name was the
// last user. Handlers of the previous configuration may still be serving:
// a closed client fails its commands and the guard answers them by its
// failure policy. redisMu must be held.
func releaseRedis(name string) {
	id, ok := redisOf[name]
	if !ok {
		return
	}
	delete(redisOf, name)
	dropLeases(name)
	sr := redisByID[id]
	if sr == nil {
		return
	}
	sr.users--
	if sr.users > 0 {
		return
	}
	delete(redisByID, id)
	sr.guard.Close()
	sr.client.Close()
}

// releaseIdleRedis detaches name, whose zone went to sleep, from its
// redis, and forgets the redis when name was its last user, without
// closing it: a handler of name may still serve, and counts in Redis. The
// client closes its connection itself once idle for redisIdleTimeout
// (a later command dials again), and the guard's probe ends when no
// request came for as long, so a forgotten redis holds no goroutine once
// unused. redisMu must be held.
func releaseIdleRedis(name string) {
	id, ok := redisOf[name]
	if !ok {
		return
	}
	delete(redisOf, name)
	forgetLeases(name)
	if sr := redisByID[id]; sr != nil {
		if sr.users--; sr.users <= 0 {
			delete(redisByID, id)
		}
	}
}

// redisIdleTimeout is how long a redis connection, or the guard's probe
// while Redis is down, stays without a request before it goes: a minute,
// the longest a route with little traffic goes without paying a dial.
// A variable for tests.
var redisIdleTimeout = time.Minute

func newSharedRedis(rs *redisSettings) (*sharedRedis, error) {
	opts := rs.client
	opts.IdleTimeout = redisIdleTimeout
	client, err := resp.New(opts)
	if err != nil {
		return nil, fieldError("redis", err.Error())
	}
	store, err := redisstore.New(client, redisstore.Settings{
		KeyPrefix: rs.keyPrefix,
		Cluster:   len(rs.client.Addrs) > 1,
	})
	if err != nil {
		client.Close()
		return nil, spelling.Error(err)
	}
	where := "redis " + strings.Join(rs.client.Addrs, ",") + ": "
	gopts := guard.Options{OnError: rs.policy, Store: "redis", NotCounted: redisstore.ErrOutOfMemory}
	g, err := guard.NewLogged(store, gopts, func(e guard.Event) {
		level := "windowlimit: error: "
		if e.Err == nil {
			level = "windowlimit: info: " // the end of the failure logged before
		}
		io.WriteString(storeLog, level+where+e.Line(spelling)+"\n")
	})
	if err != nil {
		client.Close()
		return nil, spelling.Error(err)
	}
	g.StopProbeWhenIdle(redisIdleTimeout)
	return &sharedRedis{client: client, guard: g}, nil
}
