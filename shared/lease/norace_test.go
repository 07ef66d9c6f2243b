//go:build !race

package lease

// raceEnabled: see race_test.go.
const raceEnabled = false
