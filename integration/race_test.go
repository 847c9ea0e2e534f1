//go:build race

package integration

// raceEnabled builds the service with -race when the tests run with -race.
const raceEnabled = true
