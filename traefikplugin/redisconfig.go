package traefikplugin

import (
	"strconv"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// redisSettings is a validated RedisConfig with OnStoreError.
type redisSettings struct {
	client    resp.Options
	keyPrefix string
	policy    guard.FailurePolicy
	// lease is set when Lease is auto: the middleware leases hot keys
	// (see leaseTableFor). It is not part of id: the client and guard do
	// not depend on it.
	lease bool
	// id identifies the client and guard these settings make: middlewares
	// and reloads with the same id share them.
	id string
}

// redisSettings checks c.Redis and c.OnStoreError. It returns nil when
// there is no redis block. TLS files are read here, so a missing or bad
// file is reported at load; nothing is dialled.
func (c *Config) redisSettings() (*redisSettings, error) {
	if c.Redis == nil {
		if c.OnStoreError != "" {
			return nil, fieldError("onStoreError", "applies only to a redis store: add a redis block or remove onStoreError")
		}
		return nil, nil
	}
	policy, err := guard.ParseFailurePolicy(strings.TrimSpace(c.OnStoreError))
	if err != nil {
		return nil, fieldError("onStoreError", `unknown value `+strconv.Quote(c.OnStoreError)+` (want allow, deny or local)`)
	}
	r := c.Redis
	rs := &redisSettings{policy: policy, keyPrefix: r.KeyPrefix}
	if rs.lease, err = redisstore.ParseLease(strings.ToLower(strings.TrimSpace(r.Lease))); err != nil {
		return nil, fieldError("redis.lease", "unknown value "+quoteValue(r.Lease)+" (want auto or off)")
	}
	if rs.keyPrefix == "" {
		rs.keyPrefix = redisstore.DefaultKeyPrefix
	}
	o := &rs.client
	for i, e := range r.Endpoints {
		e = strings.TrimSpace(e)
		if err := redisstore.CheckAddress(e); err != nil {
			return nil, fieldError("redis.endpoints["+strconv.Itoa(i)+"]", err.Error())
		}
		o.Addrs = append(o.Addrs, e)
	}
	if len(o.Addrs) == 0 {
		o.Addrs = []string{redisstore.DefaultAddress}
	}
	// Several endpoints are a Redis Cluster.
	shared := redisstore.Settings{KeyPrefix: rs.keyPrefix, DB: r.DB, Cluster: len(o.Addrs) > 1, PoolSize: r.PoolSize}
	if t := r.TLS; t != nil {
		shared.TLSCert, shared.TLSKey = t.Cert, t.Key
	}
	if err := shared.Check(); err != nil {
		return nil, spelling.Error(err)
	}
	o.Username = r.Username
	o.Password = r.Password
	o.DB = r.DB
	if o.DialTimeout, err = redisTimeout("redis.dialTimeout", r.DialTimeout); err != nil {
		return nil, err
	}
	if o.ReadTimeout, err = redisTimeout("redis.readTimeout", r.ReadTimeout); err != nil {
		return nil, err
	}
	if o.WriteTimeout, err = redisTimeout("redis.writeTimeout", r.WriteTimeout); err != nil {
		return nil, err
	}
	o.PoolSize = r.PoolSize
	if r.MaxActiveConns < 0 {
		return nil, fieldError("redis.maxActiveConns", "must not be negative, got "+strconv.Itoa(r.MaxActiveConns))
	}
	bound := r.PoolSize
	if bound == 0 {
		bound = resp.DefaultPoolSize
	}
	if r.MaxActiveConns > 0 && r.MaxActiveConns < bound {
		bound = r.MaxActiveConns
		o.PoolSize = bound
	}
	if r.MinIdleConns < 0 || r.MinIdleConns > bound {
		return nil, fieldError("redis.minIdleConns", "must be between 0 and the pool's bound "+strconv.Itoa(bound)+", got "+strconv.Itoa(r.MinIdleConns))
	}
	o.AutoPipeline = true
	if t := r.TLS; t != nil {
		if o.TLS, err = resp.LoadTLS(t.CA, t.Cert, t.Key, t.InsecureSkipVerify); err != nil {
			return nil, fieldError("redis.tls", err.Error())
		}
	}
	rs.id = redisID(r, o.Addrs, rs.keyPrefix, policy)
	return rs, nil
}

// redisTimeout parses an optional duration of at least resp.MinTimeout;
// empty means the client's default.
func redisTimeout(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := parseDuration(field, s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fieldError(field, "must be positive, got "+strconv.Quote(s))
	}
	// Shorter, the client's watchdog would spin (see resp.MinTimeout).
	if d < resp.MinTimeout {
		return 0, fieldError(field, d.String()+" is too short (at least "+resp.MinTimeout.String()+")")
	}
	return d, nil
}

// redisID spells out everything the client and guard depend on.
func redisID(r *RedisConfig, addrs []string, prefix string, policy guard.FailurePolicy) string {
	var b strings.Builder
	for _, a := range addrs {
		b.WriteString(strconv.Quote(a))
	}
	b.WriteString(" u=" + strconv.Quote(r.Username) + " p=" + strconv.Quote(r.Password) +
		" db=" + strconv.Itoa(r.DB) + " dial=" + strconv.Quote(r.DialTimeout) +
		" read=" + strconv.Quote(r.ReadTimeout) + " write=" + strconv.Quote(r.WriteTimeout) +
		" pool=" + strconv.Itoa(r.PoolSize) + "," + strconv.Itoa(r.MaxActiveConns) + " prefix=" + strconv.Quote(prefix) + " on=" + policy.String())
	if t := r.TLS; t != nil {
		b.WriteString(" tls=" + strconv.Quote(t.CA) + strconv.Quote(t.Cert) + strconv.Quote(t.Key) +
			strconv.FormatBool(t.InsecureSkipVerify))
	}
	return b.String()
}
