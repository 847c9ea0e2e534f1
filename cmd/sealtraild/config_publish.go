package main

import (
	"fmt"
	"time"
)

// PublishConfig configures publication: the mirror work that follows the commit
// (tiles, entry bundles, checkpoint notes), done in rounds that cover every
// project-stream due (docs/operations.md, "Publication").
type PublishConfig struct {
	// IntervalMS is the least time between two publications of one project-stream
	// (default 200): a busy stream publishes at most this often, a quiet one once
	// after its last batch. Proofs do not wait for it.
	IntervalMS int `json:"intervalMs"`
	// MaxStreamsPerRound bounds the project-streams published together in one round
	// (default 1000): one catalog write and one store write for all of them.
	MaxStreamsPerRound int `json:"maxStreamsPerRound"`
}

// check refuses negative values (0 keeps the default).
func (c PublishConfig) check() error {
	if c.IntervalMS < 0 || c.IntervalMS > int(time.Hour/time.Millisecond) {
		return fmt.Errorf("config: publish.intervalMs is %d; use 0 (default 200) to 3600000", c.IntervalMS)
	}
	if c.MaxStreamsPerRound < 0 || c.MaxStreamsPerRound > 100_000 {
		return fmt.Errorf("config: publish.maxStreamsPerRound is %d; use 0 (default 1000) to 100000", c.MaxStreamsPerRound)
	}
	return nil
}

// interval is IntervalMS as a duration; 0 leaves the sequencer's default.
func (c PublishConfig) interval() time.Duration {
	return time.Duration(c.IntervalMS) * time.Millisecond
}
