package main

import "time"

// RetentionConfig configures the retention job (docs/retention.md).
type RetentionConfig struct {
	// Disabled stops this replica from running the retention job. Every replica may
	// run it: a catalog lease lets one at a time.
	Disabled bool `json:"disabled"`
	// IntervalSeconds is how often the job looks for expired epochs (default 3600).
	IntervalSeconds int `json:"intervalSeconds"`
}

func (c RetentionConfig) interval() time.Duration {
	if c.IntervalSeconds <= 0 {
		return time.Hour
	}
	return time.Duration(c.IntervalSeconds) * time.Second
}
