//go:build race

package lease

// raceEnabled is set when the tests run with -race, which slows them ten
// to thirty times: the long simulations then run shorter, or not at all
// (scripts/test.sh runs them in full without -race).
const raceEnabled = true
