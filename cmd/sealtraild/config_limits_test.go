package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigServerLimits: the HTTP server's timeouts and limits have their documented
// defaults, are read from the environment, reach the http.Server, and bad values stop
// the start with a message naming them.
func TestConfigServerLimits(t *testing.T) {
	c := defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	srv := httpServer(c, nil, newLogger(new(strings.Builder), "info"))
	if srv.ReadHeaderTimeout != 10*time.Second || srv.ReadTimeout != time.Minute || srv.WriteTimeout != time.Minute ||
		srv.IdleTimeout != 2*time.Minute || srv.MaxHeaderBytes != 64<<10 {
		t.Fatalf("default server limits: header %s, read %s, write %s, idle %s, headers %d bytes",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}

	t.Setenv("SEALTRAIL_READ_TIMEOUT_MS", "2500")
	t.Setenv("SEALTRAIL_MAX_HEADER_BYTES", "8192")
	t.Setenv("SEALTRAIL_READ_RATE_LIMIT", "3")
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if c.ReadTimeoutMS != 2500 || c.MaxHeaderBytes != 8192 || c.ReadRateLimit != 3 {
		t.Fatalf("from the environment: %+v", c)
	}

	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"zero read timeout", func(c *Config) { c.ReadTimeoutMS = 0 }, "must be positive"},
		{"negative write timeout", func(c *Config) { c.WriteTimeoutMS = -1 }, "must be positive"},
		{"zero header bytes", func(c *Config) { c.MaxHeaderBytes = 0 }, "must be positive"},
		{"header timeout over the read timeout", func(c *Config) { c.ReadHeaderTimeoutMS = 70_000 }, "must not exceed readTimeoutMs"},
		{"negative read rate limit", func(c *Config) { c.ReadRateLimit = -1 }, "must not be negative"},
		{"negative auth failure limit", func(c *Config) { c.AuthFailureLimit = -1 }, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultConfig()
			c.DataDir = t.TempDir()
			tc.set(&c)
			if err := c.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolve = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
