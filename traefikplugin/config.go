package traefikplugin

// Config is the middleware's dynamic configuration. Traefik hands its
// options to Config.Options, and New decodes them into the fields
// (decode.go): every value may also be given as a string (Docker and
// Kubernetes labels), numbers are read in decimal as written, option
// names match in any case, and an option that matches no field is
// refused with its name. Durations are strings such as "1m" or "10s"; a
// bare number is seconds.
type Config struct {
	// Window is the interval the limit applies to, such as "1m". It is
	// required.
	Window string `json:"window,omitempty" yaml:"window,omitempty" mapstructure:"-"`
	// SubWindow is the resolution of the counters and must divide Window.
	// Empty means Window/10 (Window itself for the fixed and log
	// algorithms).
	SubWindow string `json:"subWindow,omitempty" yaml:"subWindow,omitempty" mapstructure:"-"`
	// Limit is the most requests admitted per Window and key. It is
	// required.
	Limit int64 `json:"limit,omitempty" yaml:"limit,omitempty" mapstructure:"-"`
	// Algorithm is how requests are counted: sliding (the default)
	// weights the sub-window leaving the window by the part of it still
	// inside; strict counts that sub-window whole and so never admits more
	// than Limit in any interval of length Window; fixed counts in windows
	// aligned to multiples of Window; log keeps the time of every admitted
	// request, exact for small limits (at most 1024).
	Algorithm string `json:"algorithm,omitempty" yaml:"algorithm,omitempty" mapstructure:"-"`
	// Cost is what one request consumes of Limit. Zero means 1.
	Cost int64 `json:"cost,omitempty" yaml:"cost,omitempty" mapstructure:"-"`
	// SourceCriterion chooses the key requests are limited on, as in
	// Traefik's built-in rateLimit middleware. Nil means the remote
	// address, IPv6 grouped by /64 (see IPStrategy.IPv6Subnet). A request
	// for which it finds nothing (a missing header, fewer X-Forwarded-For
	// entries than the depth) is counted by its remote address, apart
	// from every other key, where the built-in puts all such requests in
	// one count.
	SourceCriterion *SourceCriterion `json:"sourceCriterion,omitempty" yaml:"sourceCriterion,omitempty" mapstructure:"-"`
	// Headers selects the rate-limit headers: legacy (the default), ietf,
	// both or none.
	Headers string `json:"headers,omitempty" yaml:"headers,omitempty" mapstructure:"-"`
	// MaxKeys bounds how many keys are tracked at once. A full zone evicts
	// the key with the least to lose, and an evicted key comes back with
	// at least the count it had, never a fresh budget. Zero means 100000.
	MaxKeys int `json:"maxKeys,omitempty" yaml:"maxKeys,omitempty" mapstructure:"-"`
	// DryRun lets requests over the limit through, with the rate-limit
	// headers, and logs that they would have been rejected.
	DryRun bool `json:"dryRun,omitempty" yaml:"dryRun,omitempty" mapstructure:"-"`
	// LogKey puts the request's key in the dry-run log line. It is off by
	// default because keys may hold API keys or other personal data.
	LogKey bool `json:"logKey,omitempty" yaml:"logKey,omitempty" mapstructure:"-"`
	// StatusCode is the status of a rejected request, 400 to 599. Zero
	// means 429.
	StatusCode int `json:"statusCode,omitempty" yaml:"statusCode,omitempty" mapstructure:"-"`
	// Message is the plain-text body of a rejected request. Empty means
	// "Too Many Requests".
	Message string `json:"message,omitempty" yaml:"message,omitempty" mapstructure:"-"`
	// Redis, when set, keeps the counts in Redis, shared by every Traefik
	// instance that uses the same Redis and middleware name. Nil keeps
	// them in this instance's memory.
	Redis *RedisConfig `json:"redis,omitempty" yaml:"redis,omitempty" mapstructure:"-"`
	// CountStatus makes the middleware count responses instead of
	// requests: every request is checked (a key with no room left for one
	// more is rejected at once, without reaching the service), and counted
	// only if its response's status is listed. Entries are codes or
	// inclusive ranges, as Traefik's errors middleware writes them:
	// ["401", "403", "500-599"]; as a label, countStatus=401,403,500-599.
	// Its own rejections are never counted.
	CountStatus []string `json:"countStatus,omitempty" yaml:"countStatus,omitempty" mapstructure:"-"`
	// Overrides give some requests a limit of their own, or exempt them:
	// entries "<key or CIDR>=<limit>" or "<key or CIDR>=unlimited", such
	// as ["gold-key=600", "10.0.0.0/8=unlimited"]; as a label,
	// overrides=gold-key=600,10.0.0.0/8=unlimited. A key matches the
	// request's key, the value sourceCriterion chooses, exactly. A CIDR
	// (a single IP address is a CIDR of one address) matches the client's
	// own address: the one ipStrategy picks, before grouping by
	// ipv6Subnet (when it picks none, the remote address, and then only
	// to lower the limit), or the remote address with requestHeaderName
	// or requestHost; never the key, which a client may choose. The override
	// of the key applies first, then the narrowest CIDR. An exempt
	// request is neither counted nor limited, and gets no rate-limit
	// headers. A key's count does not depend on its limit.
	Overrides []string `json:"overrides,omitempty" yaml:"overrides,omitempty" mapstructure:"-"`
	// OnStoreError says how requests are decided while Redis fails: allow
	// (the default) admits them, deny rejects them, local decides them with
	// this instance's in-memory limiter. It requires Redis.
	OnStoreError string `json:"onStoreError,omitempty" yaml:"onStoreError,omitempty" mapstructure:"-"`
	// Persist, when its directory is set, saves the in-memory counts to
	// disk every interval, so that they survive a restart of Traefik. Nil
	// keeps them in memory only.
	Persist *PersistConfig `json:"persist,omitempty" yaml:"persist,omitempty" mapstructure:"-"`
	// InFlight, when set, holds at most this many requests of each key
	// (the key sourceCriterion chooses) running at once: a request takes
	// a slot when it is admitted and frees it when its response is done
	// (completed, the client gone, a stream reset, a panic); one more is
	// refused with statusCode and Retry-After 1. Alone (no window, no
	// limit) it is a concurrency limit only, like Traefik's inFlightReq;
	// beside window and limit both apply, and a request refused by one
	// takes nothing from the other. With redis the slots of a key are one
	// set for every instance; without, they are this instance's.
	InFlight int64 `json:"inFlight,omitempty" yaml:"inFlight,omitempty" mapstructure:"-"`
	// InFlightTTL is how long a slot in Redis stays taken when the
	// instance holding it stops renewing it (killed, cut off from Redis);
	// each instance renews its slots every third of it while their
	// requests run. Empty means 30s; at least 1s.
	InFlightTTL string `json:"inFlightTTL,omitempty" yaml:"inFlightTTL,omitempty" mapstructure:"-"`
	// Ban, when set ("1h"), refuses a key that reaches its limit for that
	// long, from the request the window first refuses, even once the
	// window would admit it again: "5 failed logins in 15 minutes, then
	// nothing for an hour". Retry-After and the reset headers then give
	// the ban's end. With countStatus, the request that finds the counted
	// responses (and those in flight) at the limit starts it. With Redis
	// one ban holds for every Traefik instance; with persist it survives
	// a restart. It needs window and limit.
	Ban string `json:"ban,omitempty" yaml:"ban,omitempty" mapstructure:"-"`

	// Options holds every option as Traefik passed it: its decoder sees
	// none of the fields above (mapstructure:"-"), so all of them land
	// here, and New decodes them into the fields (decode.go), refusing an
	// option that matches none, or a bad value, with its name. Go callers
	// may set the fields instead and leave Options empty.
	Options map[string]any `json:"-" yaml:"-" mapstructure:",remain"`
}

// RedisConfig has the field names of Traefik's rateLimit.redis where they
// mean the same. Durations are strings such as "500ms"; a bare number is
// seconds.
type RedisConfig struct {
	// Endpoints are the host:port addresses of Redis. One address is a
	// standalone server; several are the nodes of a Redis Cluster. Empty
	// means localhost:6379.
	Endpoints []string `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
	// Username is the ACL user; empty means the default user.
	Username string `json:"username,omitempty" yaml:"username,omitempty"`
	// Password is sent with AUTH when set.
	Password string `json:"password,omitempty" yaml:"password,omitempty"`
	// DB is the database to use; a Redis Cluster has only database 0.
	DB int `json:"db,omitempty" yaml:"db,omitempty"`
	// TLS, when set, encrypts the connections to Redis.
	TLS *RedisTLS `json:"tls,omitempty" yaml:"tls,omitempty"`
	// DialTimeout bounds connecting, with the TLS and AUTH handshakes.
	// Empty means 1s; a value under 1ms is an error.
	DialTimeout string `json:"dialTimeout,omitempty" yaml:"dialTimeout,omitempty"`
	// ReadTimeout bounds the wait for each reply. Empty means 500ms; a
	// value under 1ms is an error.
	ReadTimeout string `json:"readTimeout,omitempty" yaml:"readTimeout,omitempty"`
	// WriteTimeout bounds sending each command. Empty means 500ms; a
	// value under 1ms is an error.
	WriteTimeout string `json:"writeTimeout,omitempty" yaml:"writeTimeout,omitempty"`
	// PoolSize is the most connections open to each Redis server. Zero
	// means 64.
	PoolSize int `json:"poolSize,omitempty" yaml:"poolSize,omitempty"`
	// MaxActiveConns, as in Traefik's rateLimit.redis, caps the
	// connections open to each Redis server; with PoolSize, the smaller
	// of the two applies. Zero means no cap beyond PoolSize.
	MaxActiveConns int `json:"maxActiveConns,omitempty" yaml:"maxActiveConns,omitempty"`
	// MinIdleConns is accepted so that a rateLimit.redis block can be
	// reused as it is. It changes nothing: connections are opened on
	// first use (never at load) and then kept idle for reuse, up to the
	// pool's bound. It must not exceed that bound.
	MinIdleConns int `json:"minIdleConns,omitempty" yaml:"minIdleConns,omitempty"`
	// KeyPrefix starts every key written to Redis. Empty means "wl:".
	KeyPrefix string `json:"keyPrefix,omitempty" yaml:"keyPrefix,omitempty"`
	// Lease lets this instance admit a hot key's requests without a
	// Redis call each: auto (the default, also when empty) has the call
	// that decides a request of a key this instance sees often also ask
	// for a few units, counted in Redis at once, which the key's next
	// requests here spend locally while their sub-window is the newest;
	// what is left is given back when the lease ends. It never admits
	// more than per-request decisions would. off decides every request
	// in Redis. A middleware with countStatus always decides per request.
	Lease string `json:"lease,omitempty" yaml:"lease,omitempty"`
}

// RedisTLS has the shape of Traefik's rateLimit.redis.tls. The files are
// PEM.
type RedisTLS struct {
	// CA is the certificate authority of the Redis servers; empty means
	// the system's.
	CA string `json:"ca,omitempty" yaml:"ca,omitempty"`
	// Cert is the file of a client certificate, presented to the Redis
	// servers. Set it with Key, or neither.
	Cert string `json:"cert,omitempty" yaml:"cert,omitempty"`
	// Key is the file of the private key of Cert. Set it with Cert, or
	// neither.
	Key string `json:"key,omitempty" yaml:"key,omitempty"`
	// InsecureSkipVerify turns off the verification of the servers'
	// certificates. For tests only.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty" yaml:"insecureSkipVerify,omitempty"`
}

// SourceCriterion has the shape of Traefik's sourceCriterion: set at most
// one of its fields.
type SourceCriterion struct {
	// IPStrategy limits on the client IP chosen by depth or excluded IPs.
	IPStrategy *IPStrategy `json:"ipStrategy,omitempty" yaml:"ipStrategy,omitempty"`
	// RequestHeaderName limits on the first value of this request header.
	RequestHeaderName string `json:"requestHeaderName,omitempty" yaml:"requestHeaderName,omitempty"`
	// RequestHost limits on the request's host.
	RequestHost bool `json:"requestHost,omitempty" yaml:"requestHost,omitempty"`
}

// IPStrategy has the shape of Traefik's ipStrategy.
type IPStrategy struct {
	// Depth, when positive, takes the Depth-th X-Forwarded-For entry
	// counted from the right.
	Depth int `json:"depth,omitempty" yaml:"depth,omitempty"`
	// ExcludedIPs takes the rightmost X-Forwarded-For entry outside these
	// addresses and CIDR ranges. It cannot be combined with Depth.
	ExcludedIPs []string `json:"excludedIPs,omitempty" yaml:"excludedIPs,omitempty"`
	// IPv6Subnet groups IPv6 clients by this prefix length, whatever
	// address the strategy chose. Zero (unset) means 64: every IPv6 site
	// has at least a /64, so its addresses are one client. 128 keeps
	// addresses apart.
	IPv6Subnet int `json:"ipv6Subnet,omitempty" yaml:"ipv6Subnet,omitempty"`
}

// CreateConfig returns the configuration Traefik decodes the middleware's
// settings into.
func CreateConfig() *Config {
	return &Config{}
}
