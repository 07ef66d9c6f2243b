//go:build race

package ratelimit

// raceEnabled is set when the tests run with -race, which slows them five
// to ten times: the longest floods and replays then run smaller, so that
// the package holds within go test's ten minutes on a busy machine (go
// test without -race runs them in full).
const raceEnabled = true
