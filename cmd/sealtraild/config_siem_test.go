package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigSIEM: the SIEM settings are top-level members of the config file and
// SEALTRAIL_SIEM_* variables (the embedded SIEMConfig), and bad values stop the start
// with a message naming them.
func TestConfigSIEM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"siemBatchSize": 50, "siemMaxAttempts": 4}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SEALTRAIL_SIEM_LEASE_TTL_MS", "2000")
	t.Setenv("SEALTRAIL_SIEM_DISABLED", "true")
	c := defaultConfig()
	if err := c.load(path); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	if c.SIEMBatchSize != 50 || c.SIEMMaxAttempts != 4 || c.SIEMLeaseTTLMS != 2000 || !c.SIEMDisabled {
		t.Fatalf("SIEM config %+v", c.SIEMConfig)
	}
	for _, tc := range []struct {
		env, val, want string
	}{
		{"SEALTRAIL_SIEM_POLL_MS", "-1", "siemPollMs"},
		{"SEALTRAIL_SIEM_LEASE_TTL_MS", "10", "siemLeaseTtlMs"},
		{"SEALTRAIL_SIEM_BATCH_SIZE", "20000", "siemBatchSize"},
		{"SEALTRAIL_SIEM_MAX_ATTEMPTS", "x", "SEALTRAIL_SIEM_MAX_ATTEMPTS"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.val)
			c := defaultConfig()
			err := c.load("")
			if err == nil {
				err = c.resolve()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s=%s: %v, want an error naming %s", tc.env, tc.val, err, tc.want)
			}
		})
	}
}
