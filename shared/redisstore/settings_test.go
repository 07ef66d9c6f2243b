package redisstore

import (
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func TestRedisSettingsCheck(t *testing.T) {
	tests := []struct {
		s     Settings
		field ratelimit.Field
		want  string
	}{
		{Settings{KeyPrefix: "a{b}:"}, FieldKeyPrefix, `"a{b}:" must not contain braces`},
		{Settings{KeyPrefix: "a}"}, FieldKeyPrefix, "braces"},
		{Settings{DB: -1}, FieldDB, "must not be negative, got -1"},
		{Settings{DB: 2, Cluster: true}, FieldDB, "only db 0, got 2"},
		{Settings{PoolSize: -1}, FieldPoolSize, "must not be negative, got -1"},
		{Settings{TLSCert: "c.pem"}, FieldTLS, "cert and key must be given together"},
		{Settings{TLSKey: "k.pem"}, FieldTLS, "cert and key must be given together"},
	}
	for _, tt := range tests {
		err := tt.s.Check()
		if fe, ok := err.(*ratelimit.FieldError); !ok || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.want) {
			t.Errorf("Check(%+v) = %#v, want a *FieldError of %v containing %q", tt.s, err, tt.field, tt.want)
		}
	}
	ok := Settings{KeyPrefix: "wl:", DB: 3, PoolSize: 8, TLSCert: "c.pem", TLSKey: "k.pem"}
	if err := ok.Check(); err != nil {
		t.Errorf("Check(%+v) = %v", ok, err)
	}
	if _, err := New(&countingRunner{}, Settings{KeyPrefix: "{x}"}); err == nil {
		t.Error("New: prefix with braces accepted")
	} else if fe, ok := err.(*ratelimit.FieldError); !ok || fe.Field != FieldKeyPrefix {
		t.Errorf("New: %#v, want a *FieldError of the key prefix", err)
	}
}

func TestCheckRedisAddress(t *testing.T) {
	for addr, ok := range map[string]bool{
		"redis:6379": true, "127.0.0.1:1": true, "[::1]:6379": true,
		"redis": false, "redis:": false, "": false, "::1": false,
	} {
		err := CheckAddress(addr)
		if (err == nil) != ok {
			t.Errorf("CheckAddress(%q) = %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "is not host:port") {
			t.Errorf("CheckAddress(%q) = %q", addr, err)
		}
	}
}
