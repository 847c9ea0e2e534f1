//go:build race

package sequencer

// raceEnabled: the race detector slows the children several times over, so the
// process-level tests send fewer events per round (the number of rounds stays).
const raceEnabled = true
