package main

import "errors"

// SIEMConfig tunes SIEM streaming (docs/siem.md); it is embedded in Config, so its
// fields are top-level members of the config file and SEALTRAIL_SIEM_* variables.
// Destinations themselves are configured per project through the operator API.
type SIEMConfig struct {
	// SIEMDisabled stops this replica from delivering (the operator API still
	// manages destinations; another replica delivers them).
	SIEMDisabled bool `json:"siemDisabled"`
	// SIEMPollMS is how often destinations are listed and idle ones look for new
	// events (default 1000).
	SIEMPollMS int `json:"siemPollMs"`
	// SIEMLeaseTTLMS is how long a replica holds a destination without renewing it
	// (default 30000): after a crash, delivery resumes within this long.
	SIEMLeaseTTLMS int `json:"siemLeaseTtlMs"`
	// SIEMBatchSize bounds the events of one delivery (default 100).
	SIEMBatchSize int `json:"siemBatchSize"`
	// SIEMMaxAttempts failed deliveries in a row dead-letter a destination (default 10).
	SIEMMaxAttempts int `json:"siemMaxAttempts"`
	// SIEMBackoffMaxMS caps the wait between attempts (default 10000; it starts at
	// 500 ms and doubles).
	SIEMBackoffMaxMS int `json:"siemBackoffMaxMs"`
}

func (c *SIEMConfig) check() error {
	if c.SIEMPollMS < 0 || c.SIEMLeaseTTLMS < 0 || c.SIEMBatchSize < 0 || c.SIEMMaxAttempts < 0 || c.SIEMBackoffMaxMS < 0 {
		return errors.New("config: siemPollMs, siemLeaseTtlMs, siemBatchSize, siemMaxAttempts and siemBackoffMaxMs must not be negative")
	}
	if c.SIEMLeaseTTLMS > 0 && c.SIEMLeaseTTLMS < 1000 {
		return errors.New("config: siemLeaseTtlMs must be at least 1000 (a delivery attempt may take up to 10 s; the lease is renewed before each)")
	}
	if c.SIEMBatchSize > 10000 {
		return errors.New("config: siemBatchSize must be at most 10000")
	}
	return nil
}
