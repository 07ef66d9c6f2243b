package resp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// Default timeouts and pool size, used where Options leave zero.
const (
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = 500 * time.Millisecond
	DefaultWriteTimeout = 500 * time.Millisecond
	DefaultPoolSize     = 64
)

// MinTimeout is the shortest dial, read or write timeout Options accept.
// The auto-pipeline's watchdog looks at its connection several times per
// timeout, so a shorter one would keep it spinning, and no Redis answers
// within less anyway.
const MinTimeout = time.Millisecond

// Options configure a Client.
type Options struct {
	// Addrs are host:port endpoints. One address is a standalone server;
	// several are seeds of a Redis Cluster.
	Addrs []string
	// Cluster selects Redis Cluster routing even with a single seed.
	Cluster bool
	// Username is the ACL user; empty means the default user.
	Username string
	// Password is sent with AUTH when set (or when Username is set).
	Password string
	// DB is the database SELECTed on each new connection (standalone only).
	DB int
	// TLS, when set, wraps every connection; see LoadTLS.
	TLS *tls.Config
	// DialTimeout bounds connecting plus the TLS and AUTH handshake.
	DialTimeout time.Duration
	// ReadTimeout bounds the wait for each reply.
	ReadTimeout time.Duration
	// WriteTimeout bounds sending each command.
	WriteTimeout time.Duration
	// PoolSize is the most connections open to each server at once; a
	// command that finds them all busy waits, at most ReadTimeout.
	PoolSize int
	// AutoPipeline sends the commands of concurrent callers over one
	// connection per server, batched into shared writes, instead of one
	// pooled connection per command. A command that times out then breaks
	// the shared connection and fails the commands in flight with it.
	AutoPipeline bool
	// IdleTimeout, when positive, closes a pipelined connection
	// (AutoPipeline) that has had no command for that long, ending its
	// goroutines; the next command dials again, as after any broken
	// connection. Zero keeps it open until it breaks or Close.
	IdleTimeout time.Duration
}

// normalize fills the defaults and reports the first bad value.
func (o *Options) normalize() error {
	if len(o.Addrs) == 0 {
		return errors.New("resp: no address")
	}
	for _, a := range o.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("resp: address %q: want host:port", a)
		}
	}
	if len(o.Addrs) > 1 {
		o.Cluster = true
	}
	if o.Cluster && o.DB != 0 {
		return fmt.Errorf("resp: db %d: Redis Cluster has only db 0", o.DB)
	}
	if o.DB < 0 {
		return fmt.Errorf("resp: db must not be negative, got %d", o.DB)
	}
	if o.IdleTimeout < 0 {
		return fmt.Errorf("resp: idle timeout must not be negative, got %v", o.IdleTimeout)
	}
	if o.DialTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 {
		return errors.New("resp: timeouts must not be negative")
	}
	if err := checkTimeout("dial", o.DialTimeout); err != nil {
		return err
	}
	if err := checkTimeout("read", o.ReadTimeout); err != nil {
		return err
	}
	if err := checkTimeout("write", o.WriteTimeout); err != nil {
		return err
	}
	if o.PoolSize < 0 {
		return fmt.Errorf("resp: pool size must not be negative, got %d", o.PoolSize)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.PoolSize == 0 {
		o.PoolSize = DefaultPoolSize
	}
	return nil
}

// checkTimeout reports a timeout d set below MinTimeout; zero, the
// default, is fine.
func checkTimeout(name string, d time.Duration) error {
	if d > 0 && d < MinTimeout {
		return fmt.Errorf("resp: %s timeout %v is too short (at least %v)", name, d, MinTimeout)
	}
	return nil
}
