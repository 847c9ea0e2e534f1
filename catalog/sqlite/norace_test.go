//go:build !race

package sqlite

const raceEnabled = false
