package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigOps: the ops object has its defaults, reads SEALTRAIL_OPS_* (the
// environment loader recurses into it), and bad values stop the start with a message
// naming them.
func TestConfigOps(t *testing.T) {
	c := defaultConfig()
	c.DataDir = t.TempDir()
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	if c.Ops.KeyHistoryFile != filepath.Join(c.DataDir, "service-key-history.json") || c.Ops.OTLPEndpoint != "" || c.Ops.Pprof || c.Ops.TraceSampleRatio != 1 {
		t.Fatalf("defaults: %+v", c.Ops)
	}
	t.Setenv("SEALTRAIL_OPS_PPROF", "true")
	t.Setenv("SEALTRAIL_OPS_TRACE_SAMPLE_RATIO", "0.25")
	t.Setenv("SEALTRAIL_OPS_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("SEALTRAIL_OPS_KEY_HISTORY_FILE", "/etc/sealtrail/history.json")
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if !c.Ops.Pprof || c.Ops.TraceSampleRatio != 0.25 || c.Ops.OTLPEndpoint != "http://127.0.0.1:4318" || c.Ops.KeyHistoryFile != "/etc/sealtrail/history.json" {
		t.Fatalf("from the environment: %+v", c.Ops)
	}
	t.Setenv("SEALTRAIL_OPS_TRACE_SAMPLE_RATIO", "half")
	if err := defaultConfigLoad(); err == nil || !strings.Contains(err.Error(), "SEALTRAIL_OPS_TRACE_SAMPLE_RATIO") {
		t.Fatalf("a ratio that is not a number: %v", err)
	}
	for _, tc := range []struct {
		name string
		ops  OpsConfig
		want string
	}{
		{"endpoint without scheme", OpsConfig{OTLPEndpoint: "collector:4318"}, "ops.otlpEndpoint"},
		{"ratio above 1", OpsConfig{TraceSampleRatio: 1.5}, "ops.traceSampleRatio"},
		{"negative ratio", OpsConfig{TraceSampleRatio: -0.1}, "ops.traceSampleRatio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultConfig()
			c.DataDir = t.TempDir()
			c.Ops = tc.ops
			if err := c.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolve = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func defaultConfigLoad() error {
	c := defaultConfig()
	return c.load("")
}
