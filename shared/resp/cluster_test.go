package resp

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestCluster runs against a real three-master cluster: keys route by hash
// tag, a finished slot migration answers MOVED, one in progress ASK.
func TestCluster(t *testing.T) {
	addrs := redistest.Cluster(t)
	t.Run("pooled", func(t *testing.T) { clusterScenario(t, addrs, false, "p") })
	t.Run("pipelined", func(t *testing.T) { clusterScenario(t, addrs, true, "q") })
	// A least-privilege user without ASKING, as a limiter may run as.
	for _, a := range addrs {
		mustDo(t, newTestClient(t, Options{Addrs: []string{a}}), "ACL", "SETUSER", "limiter", "on", ">pw", "~*", "&*", "+@all", "-asking")
	}
	t.Run("pooled no ASKING", func(t *testing.T) { askingRefusedScenario(t, addrs, false, "r") })
	t.Run("pipelined no ASKING", func(t *testing.T) { askingRefusedScenario(t, addrs, true, "s") })
}

// askingRefusedScenario: a user without ASKING gets NOPERM on an ASK
// redirection, and the connection to the importing node stays in step:
// every later command on it gets its own reply.
func askingRefusedScenario(t *testing.T, addrs []string, pipelined bool, tag string) {
	ctx := context.Background()
	admin := make(map[string]*Client)
	ids := make(map[string]string)
	for _, a := range addrs {
		admin[a] = newTestClient(t, Options{Addrs: []string{a}})
		ids[a] = mustDo(t, admin[a], "CLUSTER", "MYID").Str
	}
	c := newTestClient(t, Options{Addrs: addrs, AutoPipeline: pipelined, Username: "limiter", Password: "pw", PoolSize: 1})
	key := "{ask" + tag + "}k"
	p, err := c.route(ctx, key, true)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := p.addr, ""
	for _, a := range addrs {
		if a != src {
			dst = a
			break
		}
	}
	// A key the importing node owns, to send commands to it directly.
	var dstKey string
	for i := 0; dstKey == ""; i++ {
		k := "{own" + tag + strconv.Itoa(i) + "}"
		if q, _ := c.route(ctx, k, true); q.addr == dst {
			dstKey = k
		}
	}
	slot := strconv.Itoa(Slot(key))
	mustDo(t, admin[dst], "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
	mustDo(t, admin[src], "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst])
	for i := 0; i < 3; i++ {
		_, err := c.Eval(ctx, "return {redis.call('INCR', KEYS[1])}", []string{key}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("EVAL after ASK without the ASKING permission: %v, want NOPERM", err)
		}
		for j := 0; j < 3; j++ {
			want := tag + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			if r, err := c.DoKey(ctx, dstKey, "ECHO", want); err != nil || r.Str != want {
				t.Fatalf("ECHO %s on the importing node = %c%q, %v", want, r.Kind, r.Str, err)
			}
		}
	}
}

func clusterScenario(t *testing.T, addrs []string, pipelined bool, tag string) {
	ctx := context.Background()
	c := newTestClient(t, Options{Addrs: addrs, AutoPipeline: pipelined})
	nodes := make(map[string]*Client)
	ids := make(map[string]string)
	for _, a := range addrs {
		nodes[a] = newTestClient(t, Options{Addrs: []string{a}})
		r, err := nodes[a].Do(ctx, "CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		ids[a] = r.Str
	}
	owner := func(key string) string {
		for a, n := range nodes {
			if _, err := n.Do(ctx, "EXISTS", key); err == nil {
				return a
			}
		}
		t.Fatalf("no node owns %s", key)
		return ""
	}
	other := func(a string) string {
		for b := range nodes {
			if b != a {
				return b
			}
		}
		return ""
	}

	// Routing: keys spread over all nodes, multi-key scripts on one tag.
	for i := 0; i < 30; i++ {
		k := "{k" + tag + strconv.Itoa(i) + "}"
		if _, err := c.DoKey(ctx, k, "SET", k, "v"+strconv.Itoa(i)); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		got, err := c.Eval(ctx, "redis.call('INCR', KEYS[1]) return {redis.call('INCR', KEYS[2])}", []string{k + "a", k + "b"}, nil)
		if err != nil || len(got) != 1 || got[0] != 1 {
			t.Fatalf("EVAL on %s: %v, %v", k, got, err)
		}
	}
	if n := len(c.masters()); n != 3 {
		t.Fatalf("slot map has %d masters, want 3", n)
	}

	// MOVED: move the slot of a key to another node behind the client's back.
	key := "{moved" + tag + "}k"
	if _, err := c.DoKey(ctx, key, "SET", key, "here"); err != nil {
		t.Fatal(err)
	}
	src := owner(key)
	dst := other(src)
	slot := strconv.Itoa(Slot(key))
	mustDo(t, nodes[dst], "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
	mustDo(t, nodes[src], "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst])
	host, port, _ := strings.Cut(dst, ":")
	mustDo(t, nodes[src], "MIGRATE", host, port, key, "0", "5000")
	for _, a := range addrs {
		mustDo(t, nodes[a], "CLUSTER", "SETSLOT", slot, "NODE", ids[dst])
	}
	if r, err := c.DoKey(ctx, key, "GET", key); err != nil || r.Str != "here" {
		t.Fatalf("GET after the slot moved: %+v, %v", r, err)
	}

	// ASK: a slot half migrated; a new key goes to the importing node.
	key = "{ask" + tag + "}k"
	src = owner(key)
	dst = other(src)
	slot = strconv.Itoa(Slot(key))
	mustDo(t, nodes[dst], "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
	mustDo(t, nodes[src], "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst])
	got, err := c.Eval(ctx, "return {redis.call('INCR', KEYS[1])}", []string{key}, nil)
	if err != nil || got[0] != 1 {
		t.Fatalf("EVAL during migration: %v, %v", got, err)
	}
	if r := mustDo(t, nodes[dst], "CLUSTER", "COUNTKEYSINSLOT", slot); r.Int != 1 {
		t.Fatalf("importing node holds %d keys of the slot, want 1", r.Int)
	}
	// The slot map still names the source: ASK does not move the slot.
	if p, _ := c.route(ctx, key, true); p.addr != src {
		t.Fatalf("ASK changed the slot map to %s", p.addr)
	}
}

func mustDo(t *testing.T, c *Client, args ...string) Reply {
	t.Helper()
	r, err := c.Do(context.Background(), args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}
