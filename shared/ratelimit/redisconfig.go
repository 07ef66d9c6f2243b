package ratelimit

import (
	"errors"
	"net"
	"strconv"
	"strings"
)

// RedisSettings are the settings of a Redis store that both hosts take
// from their configuration and check the same way; each host checks the
// settings only it has (how to find the servers, its timeouts) itself.
type RedisSettings struct {
	// KeyPrefix starts every key the store writes (see RedisKey).
	KeyPrefix string
	// DB is the database to select.
	DB int
	// Cluster tells that the servers are a Redis Cluster, which has only
	// database 0.
	Cluster bool
	// PoolSize is the most connections to each server; zero is the
	// client's default.
	PoolSize int
	// TLSCert is the file of a client certificate, given with TLSKey or
	// not at all.
	TLSCert string
	// TLSKey is the file of the key of TLSCert.
	TLSKey string
}

// Check reports the first bad value of s as a *FieldError.
func (s *RedisSettings) Check() error {
	if err := checkKeyPrefix(s.KeyPrefix); err != nil {
		return err
	}
	if s.DB < 0 {
		return fieldError(FieldDB, "must not be negative, got "+strconv.Itoa(s.DB))
	}
	if s.DB != 0 && s.Cluster {
		return fieldError(FieldDB, "a Redis Cluster has only db 0, got "+strconv.Itoa(s.DB))
	}
	if s.PoolSize < 0 {
		return fieldError(FieldPoolSize, "must not be negative, got "+strconv.Itoa(s.PoolSize))
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fieldError(FieldTLS, "cert and key must be given together")
	}
	return nil
}

// checkKeyPrefix reports a key prefix with braces, which would change the
// Redis Cluster hash tag of every key (see RedisKey), as a *FieldError.
func checkKeyPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fieldError(FieldKeyPrefix, strconv.Quote(prefix)+" must not contain braces (they would change the Redis Cluster hash tag)")
	}
	return nil
}

// CheckRedisAddress reports whether addr is the host:port of a Redis
// server, with a port. The error does not name the setting, which the
// host knows: an address is one of a list, or a URL's part.
func CheckRedisAddress(addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return errors.New(strconv.Quote(addr) + ` is not host:port (e.g. "redis:6379")`)
	}
	return nil
}
