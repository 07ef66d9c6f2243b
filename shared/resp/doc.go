// Package resp is a small Redis client speaking RESP2 over the standard
// library only, so that Traefik's yaegi interpreter can load it (go-redis
// cannot: it imports unsafe).
//
// It does what the rate limiter needs and no more: a bounded connection
// pool that dials lazily, a deadline on every read and write, AUTH (with
// an ACL user), SELECT, TLS, EVALSHA and EVAL, and Redis Cluster routing
// (slot map from CLUSTER SLOTS, CRC16 of the hash tag, MOVED and ASK). A
// connection that saw an I/O or protocol error is closed, never reused,
// and no reply, however malformed, makes it panic.
//
// Files:
//
//   - client.go: Client, Do and the script calls (EvalSha, Eval, prepared).
//   - options.go: Options, their defaults and checks.
//   - pool.go: the connection pool.
//   - conn.go: one connection: dial, handshake, a command and its reply.
//   - pipeline.go: a connection shared by concurrent commands.
//   - command.go: commands encoded once.
//   - reply.go: RESP2 replies, read with bounds.
//   - cluster.go, crc16.go: Redis Cluster's slot map and key slots.
//   - tls.go: TLS from PEM files.
package resp
