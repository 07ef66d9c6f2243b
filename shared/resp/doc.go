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
// # Under yaegi
//
// Traefik's yaegi interpreter runs the client on every request with a
// redis block, so the path of a command is shaped by what the interpreter
// charges (scripts/yaegitest: BenchmarkInterpretedCosts,
// BenchmarkRespInterpreted, BenchmarkRespPieces); compiled Go pays nothing
// for the shape:
//
//   - An interpreted statement costs hundreds of nanoseconds and a method
//     call on an interpreted type microseconds, while a call into the
//     standard library runs compiled: so the path of every command is a few
//     functions (evalInts, exec, redirect, on), a command is encoded once
//     and joined by one strings.Join, and a number is parsed by one strconv
//     call, except in the pipelined reader's loop over a reply's integers:
//     there a loop on the bytes allocates nothing where the calls it
//     replaces allocated on every reply (a conversion allocates too, so the
//     digits' values come from a table).
//   - A call allocates a slot for every local and temporary of the function
//     called, branches taken or not, and a declaration allocates each time
//     it runs: so the common reply (a small array of integers, buffered
//     whole) costs readInts and bufferedInts alone, the pipeline's loops
//     declare their variables once and do each reply's work inline, and
//     each string concatenation counts.
//   - Workarounds for the interpreter's bugs: a struct that holds the
//     recursive Reply is mis-built, so a pipelined call keeps its Reply in
//     an interface; package variables are initialised in the order of the
//     files, so CLUSTER SLOTS is a constant rather than a variable that
//     encodeCommand, with tables of another file, would set.
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
