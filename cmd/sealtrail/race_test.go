//go:build race

package main

// raceEnabled: the race detector slows the streaming tests about sevenfold, so they
// stream fewer events.
const raceEnabled = true
