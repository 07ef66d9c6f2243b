package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// Defaults of RedisConfig.
const (
	defaultDialTimeout  = time.Second
	defaultRedisTimeout = 500 * time.Millisecond
)

// RedisConfig keeps the counts in Redis, shared by every Caddy instance
// that uses the same Redis and zone names, through go-redis. Set at most
// one of Address, URL, Addresses and SentinelMaster; none means
// localhost:6379. Address, URL, Addresses, SentinelMaster,
// SentinelAddresses, SentinelUsername, SentinelPassword, Username and
// Password may hold global placeholders such as {env.REDIS_PASSWORD}.
type RedisConfig struct {
	// Address is the host:port of a standalone Redis.
	Address string `json:"address,omitempty"`
	// URL is a redis:// or rediss:// (TLS) URL, with user, password and
	// database if needed: redis://user:pass@host:6379/2.
	URL string `json:"url,omitempty"`
	// Addresses are host:port nodes of a Redis Cluster.
	Addresses []string `json:"addresses,omitempty"`
	// SentinelMaster is the name of the master watched by Redis
	// Sentinel. Set it with SentinelAddresses to reach Redis through its
	// sentinels.
	SentinelMaster string `json:"sentinel_master,omitempty"`
	// SentinelAddresses are the host:port addresses of the sentinels that
	// watch SentinelMaster. At least one is required with SentinelMaster.
	SentinelAddresses []string `json:"sentinel_addresses,omitempty"`
	// SentinelUsername is the ACL user that authenticates to the
	// sentinels themselves, which may differ from Username, sent to the
	// Redis servers. It applies only with SentinelMaster.
	SentinelUsername string `json:"sentinel_username,omitempty"`
	// SentinelPassword authenticates to the sentinels themselves (their
	// requirepass or ACL), which may differ from Password, sent to the
	// Redis servers. It applies only with SentinelMaster.
	SentinelPassword string `json:"sentinel_password,omitempty"`
	// Username is the ACL user; empty means the default user.
	Username string `json:"username,omitempty"`
	// Password is sent with AUTH when set. An empty value after
	// placeholder replacement (an unset environment variable) is an error.
	Password string `json:"password,omitempty"`
	// DB is the database to use; a Redis Cluster has only database 0.
	DB int `json:"db,omitempty"`
	// TLS, when set, encrypts the connections to Redis.
	TLS *RedisTLS `json:"tls,omitempty"`
	// DialTimeout bounds connecting. The default is 1s; it must be at
	// least 1ms.
	DialTimeout caddy.Duration `json:"dial_timeout,omitempty"`
	// Timeout bounds each read and each write. The default is 500ms; it
	// must be at least 1ms.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// PoolSize is the most connections open to each Redis server. The
	// default is go-redis's: 10 per CPU.
	PoolSize int `json:"pool_size,omitempty"`
	// KeyPrefix starts every key written to Redis. The default is "wl:".
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Lease is "auto" (the default) or "off". With "auto", a key that
	// is hot on this instance (several requests per sub-window) gets a
	// lease: the Redis call that decides one of its requests also counts
	// a few more units for it, at once, in the current sub-window, and
	// this instance admits the key's next requests from those units
	// without a call while that sub-window is the newest. What it does
	// not spend is given back when the lease ends. Leases never admit
	// more than one call per request would, and near the limit they
	// shrink to nothing. Zones with count_status, requests checked
	// against several zones, zones of the log algorithm and keys seen
	// only a few times per sub-window are decided with one call per
	// request. "off" makes every request one call.
	Lease string `json:"lease,omitempty"`
}

// RedisTLS configures TLS to Redis. The files are PEM.
type RedisTLS struct {
	// CA is the certificate authority of the Redis servers; empty means
	// the system's.
	CA string `json:"ca,omitempty"`
	// Cert is the file of a client certificate, presented to the Redis
	// servers. Set it with Key, or neither.
	Cert string `json:"cert,omitempty"`
	// Key is the file of the private key of Cert. Set it with Cert, or
	// neither.
	Key string `json:"key,omitempty"`
	// ServerName overrides the name checked in the server's certificate.
	ServerName string `json:"server_name,omitempty"`
	// InsecureSkipVerify turns off the verification of the servers'
	// certificates. For tests only.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// check reports the first bad value that needs no placeholder replacement,
// named as in the Caddyfile.
func (c *RedisConfig) check() error {
	set := 0
	for _, given := range []bool{c.Address != "", c.URL != "", len(c.Addresses) > 0, c.SentinelMaster != "" || len(c.SentinelAddresses) > 0} {
		if given {
			set++
		}
	}
	if set > 1 {
		return errors.New("set one of address, url, addresses (cluster) and sentinel")
	}
	if c.SentinelMaster != "" && len(c.SentinelAddresses) == 0 || c.SentinelMaster == "" && len(c.SentinelAddresses) > 0 {
		return errors.New("sentinel: want a master name and at least one sentinel address")
	}
	if (c.SentinelUsername != "" || c.SentinelPassword != "") && c.SentinelMaster == "" {
		return errors.New("sentinel_username and sentinel_password apply only with sentinel")
	}
	if c.DialTimeout < 0 || c.Timeout < 0 {
		return errors.New("dial_timeout and timeout must not be negative")
	}
	if err := checkRedisTimeout("dial_timeout", c.DialTimeout); err != nil {
		return err
	}
	if err := checkRedisTimeout("timeout", c.Timeout); err != nil {
		return err
	}
	return spelling.Error(c.shared().Check())
}

// leases reports whether c lets hot keys lease units.
func (c *RedisConfig) leases() bool {
	on, _ := redisstore.ParseLease(c.Lease)
	return on
}

// checkRedisTimeout reports a timeout set below resp.MinTimeout: no Redis
// answers within less, and every call would fail. Zero means the default.
func checkRedisTimeout(field string, d caddy.Duration) error {
	if d > 0 && time.Duration(d) < resp.MinTimeout {
		return fmt.Errorf("%s: %v is too short (at least %v)", field, time.Duration(d), resp.MinTimeout)
	}
	return nil
}

// shared returns the settings of c that the core checks.
func (c *RedisConfig) shared() *redisstore.Settings {
	s := &redisstore.Settings{KeyPrefix: c.KeyPrefix, DB: c.DB, Cluster: len(c.Addresses) > 0, PoolSize: c.PoolSize, Lease: c.Lease}
	if t := c.TLS; t != nil {
		s.TLSCert, s.TLSKey = t.Cert, t.Key
	}
	return s
}

// redisSetup is a RedisConfig with placeholders replaced and defaults
// filled in: what the shared client and guard are made from.
type redisSetup struct {
	opts    redis.UniversalOptions
	cluster bool
	tls     *RedisTLS
	prefix  string
	policy  guard.FailurePolicy
}

// resolve replaces the placeholders of c and fills the defaults.
func (c *RedisConfig) resolve(policy guard.FailurePolicy) (*redisSetup, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	repl := caddy.NewReplacer()
	var err error
	replace := func(field, s string, errOnEmpty bool) string {
		if err != nil || s == "" {
			return s
		}
		out, rerr := repl.ReplaceOrErr(s, errOnEmpty, true)
		if rerr != nil {
			err = fmt.Errorf("%s: %w", field, rerr)
		}
		return out
	}
	addr := func(field, s string) string {
		s = replace(field, s, true)
		if err == nil {
			if aerr := redisstore.CheckAddress(s); aerr != nil {
				err = fmt.Errorf("%s: %w", field, aerr)
			}
		}
		return s
	}
	s := &redisSetup{policy: policy, tls: c.TLS, cluster: len(c.Addresses) > 0}
	o := &s.opts
	switch {
	case c.URL != "":
		u := replace("url", c.URL, true)
		if err != nil {
			return nil, err
		}
		parsed, perr := redis.ParseURL(u)
		if perr != nil {
			// The URL may hold a password: name the field, not the value.
			return nil, fmt.Errorf("url: %v", redactURLError(perr, u))
		}
		// The URL's database is checked as the db setting is: a bad one
		// would otherwise fail every request's SELECT, not the load.
		if derr := (&redisstore.Settings{DB: parsed.DB}).Check(); derr != nil {
			return nil, fmt.Errorf("url: %w", spelling.Error(derr))
		}
		o.Addrs = []string{parsed.Addr}
		o.Username, o.Password, o.DB = parsed.Username, parsed.Password, parsed.DB
		if parsed.TLSConfig != nil && s.tls == nil {
			s.tls = &RedisTLS{ServerName: parsed.TLSConfig.ServerName}
		}
	case len(c.Addresses) > 0:
		for i, a := range c.Addresses {
			o.Addrs = append(o.Addrs, addr("addresses["+strconv.Itoa(i)+"]", a))
		}
	case c.SentinelMaster != "":
		o.MasterName = replace("sentinel", c.SentinelMaster, true)
		for i, a := range c.SentinelAddresses {
			o.Addrs = append(o.Addrs, addr("sentinel address "+strconv.Itoa(i+1), a))
		}
		o.SentinelUsername = replace("sentinel_username", c.SentinelUsername, true)
		o.SentinelPassword = replace("sentinel_password", c.SentinelPassword, true)
	default:
		a := c.Address
		if a == "" {
			a = redisstore.DefaultAddress
		}
		o.Addrs = []string{addr("address", a)}
	}
	if u := replace("username", c.Username, true); u != "" {
		o.Username = u
	}
	if p := replace("password", c.Password, true); p != "" {
		o.Password = p
	}
	if c.DB != 0 {
		o.DB = c.DB
	}
	if err != nil {
		return nil, err
	}
	s.prefix = c.KeyPrefix
	if s.prefix == "" {
		s.prefix = redisstore.DefaultKeyPrefix
	}
	o.DialTimeout = time.Duration(c.DialTimeout)
	if o.DialTimeout == 0 {
		o.DialTimeout = defaultDialTimeout
	}
	o.ReadTimeout = time.Duration(c.Timeout)
	if o.ReadTimeout == 0 {
		o.ReadTimeout = defaultRedisTimeout
	}
	o.WriteTimeout = o.ReadTimeout
	o.PoolSize = c.PoolSize
	// One retry covers a pooled connection the server closed; more would
	// add their timeouts to a request before the breaker opens.
	o.MaxRetries = 1
	o.ContextTimeoutEnabled = true
	return s, nil
}

// redactURLError keeps a URL's password out of an error message.
func redactURLError(err error, u string) string {
	msg := err.Error()
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.LastIndex(u, "@"); at > i {
			msg = strings.ReplaceAll(msg, u[i+3:at], "xxxxx")
		}
	}
	return msg
}

// poolKey identifies the client and guard s makes: handlers and reloads
// with the same key share them.
func (s *redisSetup) poolKey() string {
	o := &s.opts
	k := fmt.Sprintf("redis addrs=%q master=%q sentinel_auth=%q,%q user=%q pass=%q db=%d dial=%v timeout=%v pool=%d cluster=%v prefix=%q on_error=%v",
		o.Addrs, o.MasterName, o.SentinelUsername, o.SentinelPassword, o.Username, o.Password, o.DB, o.DialTimeout, o.ReadTimeout, o.PoolSize, s.cluster, s.prefix, s.policy)
	if t := s.tls; t != nil {
		k += fmt.Sprintf(" tls=%q,%q,%q,%q,%v", t.CA, t.Cert, t.Key, t.ServerName, t.InsecureSkipVerify)
	}
	return k
}

// clients returns a function that makes a go-redis client of s, which
// does not connect until used. The TLS files are read once, here.
func (s *redisSetup) clients() (func() redis.UniversalClient, error) {
	o := s.opts
	if t := s.tls; t != nil {
		cfg, err := resp.LoadTLS(t.CA, t.Cert, t.Key, t.InsecureSkipVerify)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		cfg.ServerName = t.ServerName
		o.TLSConfig = cfg
	}
	switch {
	case s.cluster:
		return func() redis.UniversalClient { return redis.NewClusterClient(o.Cluster()) }, nil
	case o.MasterName != "":
		return func() redis.UniversalClient { return redis.NewFailoverClient(o.Failover()) }, nil
	}
	return func() redis.UniversalClient { return redis.NewClient(o.Simple()) }, nil
}

// redisStores holds the Redis clients and guards of the loaded configs,
// shared by the handlers that use the same settings and kept across
// reloads; the last handler to go closes them.
var redisStores = caddy.NewUsagePool()

// retiredStats adds up the counters of closed guards, so the metrics,
// which sum every guard, never go down.
var (
	retiredMu    sync.Mutex
	retiredStats guard.Stats
)

// pooledRedis is one client with the guard in front of its store.
type pooledRedis struct {
	runner *goRedisRunner
	guard  *guard.Guard
	store  *redisstore.Store // behind guard; nil in some tests
}

// keyCall returns the store's call prepared for z, or nil.
func (p *pooledRedis) keyCall(z *ratelimit.Zone) *redisstore.KeyCall {
	if p.store == nil {
		return nil
	}
	return p.store.KeyCall(z, p.guard)
}

// Destruct stops the guard's probe, keeps its counters and closes the
// clients.
func (p *pooledRedis) Destruct() error {
	p.guard.Close()
	st := p.guard.Stats()
	retiredMu.Lock()
	retiredStats.Failures += st.Failures
	retiredStats.Fallbacks += st.Fallbacks
	retiredStats.CacheHits += st.CacheHits
	retiredStats.OutOfMemory += st.OutOfMemory
	retiredStats.Overloaded += st.Overloaded
	retiredMu.Unlock()
	return p.runner.Close()
}

// acquirePooledRedis returns the Redis client, store and guard for s,
// creating them if no loaded config has them, and their pool key for
// releaseRedis.
func acquirePooledRedis(s *redisSetup, logger *zap.Logger) (string, *pooledRedis, error) {
	key := s.poolKey()
	v, _, err := redisStores.LoadOrNew(key, func() (caddy.Destructor, error) {
		newClient, err := s.clients()
		if err != nil {
			return nil, err
		}
		storeOpts := redisstore.Settings{KeyPrefix: s.prefix, Cluster: s.cluster}
		runner := newGoRedisRunner(newClient())
		store, err := redisstore.New(runner, storeOpts)
		if err != nil {
			runner.Close()
			return nil, err
		}
		probe := func(ctx context.Context) error { return runner.probe(ctx, newClient, storeOpts) }
		g, err := guard.NewLogged(store, guard.Options{OnError: s.policy, Probe: probe, Store: "redis", NotCounted: redisstore.ErrOutOfMemory}, guardLog(logger, s))
		if err != nil {
			runner.Close()
			return nil, err
		}
		return &pooledRedis{runner: runner, guard: g, store: store}, nil
	})
	if err != nil {
		return "", nil, err
	}
	return key, v.(*pooledRedis), nil
}

// guardLog returns the log function of the guard of s: failures, Redis
// out of memory and calls not sent for this instance's backlog at WARN,
// recoveries at INFO.
func guardLog(logger *zap.Logger, s *redisSetup) func(guard.Event) {
	addrs := zap.String("redis", strings.Join(s.opts.Addrs, ","))
	return func(e guard.Event) {
		msg := e.Message(spelling)
		switch {
		case e.Err == nil:
			logger.Info(msg, addrs, zap.Duration("unavailable", e.Down))
		case e.NotCounted(), e.Overloaded():
			logger.Warn(msg, addrs, zap.String("on_store_error", e.Policy.String()), zap.Int64("not_logged", e.Suppressed))
		default:
			logger.Warn(msg, addrs, zap.String("on_store_error", e.Policy.String()), zap.Int64("errors_not_logged", e.Suppressed), zap.Error(e.Err))
		}
	}
}

// releaseRedis drops one use of the client under key.
func releaseRedis(key string) error {
	if _, err := redisStores.Delete(key); err != nil {
		return fmt.Errorf("releasing redis store: %w", err)
	}
	return nil
}

// guardStats sums the counters of every guard, live and closed, and
// counts the open breakers.
func guardStats() (sum guard.Stats, open int) {
	retiredMu.Lock()
	sum = retiredStats
	retiredMu.Unlock()
	redisStores.Range(func(_, v any) bool {
		st := v.(*pooledRedis).guard.Stats()
		sum.Failures += st.Failures
		sum.Fallbacks += st.Fallbacks
		sum.CacheHits += st.CacheHits
		sum.OutOfMemory += st.OutOfMemory
		sum.Overloaded += st.Overloaded
		if st.Open {
			open++
		}
		return true
	})
	return sum, open
}
