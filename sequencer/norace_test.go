//go:build !race

package sequencer

const raceEnabled = false
