package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigAnchor: the anchor section defaults to the spec's hour, is read from
// SEALTRAIL_ANCHOR as a JSON object, and bad values stop the start with a message
// naming them.
func TestConfigAnchor(t *testing.T) {
	c := defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil || c.Anchor.interval() != time.Hour || len(c.Anchor.Witnesses) != 0 {
		t.Fatalf("default anchor config %+v, %v", c.Anchor, err)
	}
	const key = "w.example+a0d5b1b2+AWrTj6pFdsR57bbwwN5qR4Hd6wTx4IUpgDzS1FK0bfAp"
	t.Setenv("SEALTRAIL_ANCHOR", `{"intervalMs": 2000, "witnesses": [{"url": "http://127.0.0.1:9", "key": "`+key+`"}]}`)
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil || c.Anchor.interval() != 2*time.Second || c.Anchor.Witnesses[0].Key != key {
		t.Fatalf("anchor config from the environment %+v, %v", c.Anchor, err)
	}
	t.Setenv("SEALTRAIL_ANCHOR", `{"rekor": {"url": "http://127.0.0.1:9"}, "tsa": {"url": "https://tsa.example/api/v1/timestamp"}, "peerTimeoutMs": 5000}`)
	c = defaultConfig()
	if err := c.load(""); err != nil {
		t.Fatal(err)
	}
	if err := c.resolve(); err != nil || c.Anchor.Rekor.URL != "http://127.0.0.1:9" || c.Anchor.TSA == nil || c.Anchor.peerTimeout() != 5*time.Second {
		t.Fatalf("rekor and tsa config from the environment %+v, %v", c.Anchor, err)
	}
	for _, tc := range []struct{ env, want string }{
		{`{"rekor": {"url": "ftp://x"}}`, "anchor.rekor.url"},
		{`{"rekor": {}}`, "anchor.rekor.url"},
		{`{"tsa": {"url": "http://"}}`, "anchor.tsa.url"},
		{`{"tsa": {"url": "http://x", "key": "k"}}`, "SEALTRAIL_ANCHOR"},
		{`{"peerTimeoutMs": 10}`, "anchor.peerTimeoutMs"},
		{`{"intervalMs": 5}`, "anchor.intervalMs"},
		{`{"witnesses": [{"url": "ftp://x", "key": "` + key + `"}]}`, "anchor.witnesses[0].url"},
		{`{"witnesses": [{"url": "http://x", "key": "nokey"}]}`, "anchor.witnesses[0].key"},
		{`{"intervalMs": 1000, "extra": 1}`, "SEALTRAIL_ANCHOR"},
		{`not json`, "SEALTRAIL_ANCHOR"},
	} {
		t.Setenv("SEALTRAIL_ANCHOR", tc.env)
		c := defaultConfig()
		err := c.load("")
		if err == nil {
			err = c.resolve()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SEALTRAIL_ANCHOR=%s: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}
