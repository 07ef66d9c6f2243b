//go:build !race

package ratelimit

// raceEnabled: see race_test.go.
const raceEnabled = false
