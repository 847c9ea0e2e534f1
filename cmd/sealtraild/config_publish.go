package main

import (
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/sequencer"
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
	// BudgetPerSecond bounds the publications per second, over the process, of the
	// project-streams with less than a tile (256 events) to publish (default 100,
	// sequencer.DefaultPublishBudget): with n of them due, each publishes about every
	// max(interval, n/budget). Busier streams are not held back.
	BudgetPerSecond int `json:"budgetPerSecond"`
}

// check refuses negative values (0 keeps the default).
func (c PublishConfig) check() error {
	if c.IntervalMS < 0 || c.IntervalMS > int(time.Hour/time.Millisecond) {
		return fmt.Errorf("config: publish.intervalMs is %d; use 0 (default 200) to 3600000", c.IntervalMS)
	}
	if c.MaxStreamsPerRound < 0 || c.MaxStreamsPerRound > 100_000 {
		return fmt.Errorf("config: publish.maxStreamsPerRound is %d; use 0 (default 1000) to 100000", c.MaxStreamsPerRound)
	}
	if c.BudgetPerSecond < 0 || c.BudgetPerSecond > 1_000_000 {
		return fmt.Errorf("config: publish.budgetPerSecond is %d; use 0 (default %d) to 1000000", c.BudgetPerSecond, sequencer.DefaultPublishBudget)
	}
	return nil
}

// interval is IntervalMS as a duration; 0 leaves the sequencer's default.
func (c PublishConfig) interval() time.Duration {
	return time.Duration(c.IntervalMS) * time.Millisecond
}
