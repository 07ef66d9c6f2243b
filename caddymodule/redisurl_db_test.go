package caddymodule

import (
	"strings"
	"testing"
)

// A database in the URL is checked as the db setting is: a negative one
// is an error at provision, not a SELECT that fails on every request.
func TestRedisURLNegativeDB(t *testing.T) {
	_, err := (&RedisConfig{URL: "redis://r:6379/-1"}).resolve(0)
	if err == nil || !strings.Contains(err.Error(), "url:") || !strings.Contains(err.Error(), "-1") {
		t.Errorf("error %v, want one naming url and -1", err)
	}
}
