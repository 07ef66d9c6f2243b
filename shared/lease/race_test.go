//go:build race

package lease

// raceEnabled is set when the tests run with -race, which slows them ten
// to thirty times: the long simulations then run smaller (go test without
// -race runs them in full).
const raceEnabled = true
