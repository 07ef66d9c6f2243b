package redisstore

import (
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// The defaults both hosts apply.
const (
	// DefaultAddress is the server a host connects to when its
	// configuration names none.
	DefaultAddress = "localhost:6379"
	// DefaultKeyPrefix starts every key when the configuration sets no
	// prefix.
	DefaultKeyPrefix = "wl:"
)

// The values of Settings.Lease.
const (
	LeaseAuto = "auto"
	LeaseOff  = "off"
)

// The settings that the errors of Settings.Check name.
const (
	FieldKeyPrefix ratelimit.Field = "KeyPrefix"
	FieldDB        ratelimit.Field = "DB"
	FieldPoolSize  ratelimit.Field = "PoolSize"
	FieldTLS       ratelimit.Field = "TLS"
	FieldLease     ratelimit.Field = "Lease"
)

// Settings are a Redis store's settings that both hosts take from their
// configuration and check the same way. How to find the servers and how
// long to wait for them are each host's own.
type Settings struct {
	// KeyPrefix starts every key the store writes (see Key). A host
	// applies DefaultKeyPrefix when its configuration sets none.
	KeyPrefix string
	// DB is the database to select.
	DB int
	// Cluster tells that the servers are a Redis Cluster, which has only
	// database 0 and cannot use keys of different hash slots in one call:
	// a request whose items have different keys is then decided one key
	// at a time, stopping at the first denial, and the items of a key
	// already admitted stay counted.
	Cluster bool
	// PoolSize is the most connections to each server; zero is the
	// client's default.
	PoolSize int
	// TLSCert is the file of a client certificate, given with TLSKey or
	// not at all.
	TLSCert string
	// TLSKey is the file of the key of TLSCert.
	TLSKey string
	// Lease is LeaseAuto (also the empty string) or LeaseOff: whether a
	// hot key's calls count units ahead for the instance to spend without
	// a call (see the lease package).
	Lease string
	// CallerTime makes the script count at the time passed to Take rather
	// than at the server's TIME: for tests and simulations on a simulated
	// clock only. In production, instances with skewed clocks would
	// disagree.
	CallerTime bool
}

// Check reports the first bad value of s as a *ratelimit.FieldError.
func (s *Settings) Check() error {
	if err := checkKeyPrefix(s.KeyPrefix); err != nil {
		return err
	}
	if s.DB < 0 {
		return &ratelimit.FieldError{Field: FieldDB, Msg: "must not be negative, got " + strconv.Itoa(s.DB)}
	}
	if s.DB != 0 && s.Cluster {
		return &ratelimit.FieldError{Field: FieldDB, Msg: "a Redis Cluster has only db 0, got " + strconv.Itoa(s.DB)}
	}
	if s.PoolSize < 0 {
		return &ratelimit.FieldError{Field: FieldPoolSize, Msg: "must not be negative, got " + strconv.Itoa(s.PoolSize)}
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return &ratelimit.FieldError{Field: FieldTLS, Msg: "cert and key must be given together"}
	}
	if _, err := ParseLease(s.Lease); err != nil {
		return err
	}
	return nil
}

// ParseLease reports whether the lease setting v lets hot keys lease
// units: LeaseAuto or empty (yes) or LeaseOff; anything else is a
// *ratelimit.FieldError. A host whose configuration ignores case lowers v
// first.
func ParseLease(v string) (bool, error) {
	switch v {
	case "", LeaseAuto:
		return true, nil
	case LeaseOff:
		return false, nil
	}
	return false, &ratelimit.FieldError{Field: FieldLease, Msg: "want auto or off, got " + strconv.Quote(v)}
}

// checkKeyPrefix reports a key prefix with braces, which would change the
// Redis Cluster hash tag of every key (see Key).
func checkKeyPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return &ratelimit.FieldError{Field: FieldKeyPrefix, Msg: strconv.Quote(prefix) + " must not contain braces (they would change the Redis Cluster hash tag)"}
	}
	return nil
}

// CheckAddress reports whether addr is the host:port of a Redis server,
// with a port. The error does not name the setting, which the host knows:
// an address is one of a list, or a URL's part.
func CheckAddress(addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return errors.New(strconv.Quote(addr) + ` is not host:port (e.g. "redis:6379")`)
	}
	return nil
}
