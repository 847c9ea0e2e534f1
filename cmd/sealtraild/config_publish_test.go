package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigPublish: the publish object reads SEALTRAIL_PUBLISH_*, 0 keeps the
// sequencer's defaults, and bad values stop the start with a message naming them.
func TestConfigPublish(t *testing.T) {
	c := defaultConfig()
	c.DataDir = t.TempDir()
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	if c.Publish.interval() != 0 || c.Publish.MaxStreamsPerRound != 0 || c.Publish.BudgetPerSecond != 0 {
		t.Fatalf("defaults: %+v", c.Publish)
	}
	t.Setenv("SEALTRAIL_PUBLISH_INTERVAL_MS", "50")
	t.Setenv("SEALTRAIL_PUBLISH_MAX_STREAMS_PER_ROUND", "250")
	t.Setenv("SEALTRAIL_PUBLISH_BUDGET_PER_SECOND", "40")
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if c.Publish.interval() != 50*time.Millisecond || c.Publish.MaxStreamsPerRound != 250 || c.Publish.BudgetPerSecond != 40 {
		t.Fatalf("from the environment: %+v", c.Publish)
	}
	t.Setenv("SEALTRAIL_PUBLISH_INTERVAL_MS", "soon")
	if err := defaultConfigLoad(); err == nil || !strings.Contains(err.Error(), "SEALTRAIL_PUBLISH_INTERVAL_MS") {
		t.Fatalf("an interval that is not a number: %v", err)
	}
	for _, tc := range []struct {
		name string
		pub  PublishConfig
		want string
	}{
		{"negative interval", PublishConfig{IntervalMS: -1}, "publish.intervalMs"},
		{"interval above an hour", PublishConfig{IntervalMS: 3_600_001}, "publish.intervalMs"},
		{"negative round", PublishConfig{MaxStreamsPerRound: -5}, "publish.maxStreamsPerRound"},
		{"huge round", PublishConfig{MaxStreamsPerRound: 100_001}, "publish.maxStreamsPerRound"},
		{"negative budget", PublishConfig{BudgetPerSecond: -1}, "publish.budgetPerSecond"},
		{"huge budget", PublishConfig{BudgetPerSecond: 1_000_001}, "publish.budgetPerSecond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultConfig()
			c.DataDir = t.TempDir()
			c.Publish = tc.pub
			if err := c.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolve = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
