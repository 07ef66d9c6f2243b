//go:build !race

package e2e

import (
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
)

// attackSite is the site of TestE2ECountStatusAttacks: a login behind
// reverse_proxy and a zone of limit e2etest.AttackLimit a minute counting
// 401s, in memory (/mem/) and in Redis (/redis/), on a server speaking h1
// and h2c.
const attackSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
	servers {
		protocols h1 h2c
	}
}
:{{.Web}} {
	bind 127.0.0.1
	handle /mem/* {
		rate_limit {
			zone login_mem {
				window 1m
				limit {{.Limit}}
				count_status 401
			}
		}
		reverse_proxy {{.Backend}}
	}
	handle /redis/* {
		rate_limit {
			zone login_redis {
				window 1m
				limit {{.Limit}}
				count_status 401
			}
			store redis {
				address {{.Redis}}
				key_prefix atk:
			}
		}
		reverse_proxy {{.Backend}}
	}
}
`

// TestE2ECountStatusAttacks runs e2etest.CountStatusAttacks on Caddy: a
// login behind reverse_proxy, in memory and in Redis, on a server
// speaking h1 and h2c; the backend must get at most 5 attempts of each
// attack.
func TestE2ECountStatusAttacks(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	be := e2etest.StartBackend(t)
	rds := redistest.Start(t)
	c := newCaddy(t)
	c.render(attackSite, map[string]any{"Backend": be.Addr(), "Redis": rds.Addr(), "Limit": e2etest.AttackLimit})
	c.start()
	e2etest.CountStatusAttacks(t, be, c.url)
}
