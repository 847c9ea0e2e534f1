package main

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
)

// OpsConfig is the operations part of the configuration (the "ops" object; its
// environment variables are SEALTRAIL_OPS_<FIELD>).
type OpsConfig struct {
	// KeyHistoryFile is the service key history (default
	// <dataDir>/service-key-history.json; a missing file is an empty history). It is
	// public: serve it, back it up, ship it with the key (docs/key-rotation.md).
	KeyHistoryFile string `json:"keyHistoryFile"`
	// OTLPEndpoint turns on OpenTelemetry tracing: spans go to this OTLP/HTTP
	// collector URL (e.g. http://otel-collector:4318). Empty (the default) traces
	// nothing and costs nothing.
	OTLPEndpoint string `json:"otlpEndpoint"`
	// TraceSampleRatio is the share of requests traced, 0 < r <= 1 (default 1 when
	// tracing is on); a parent's decision (traceparent header) is followed.
	TraceSampleRatio float64 `json:"traceSampleRatio"`
	// Pprof serves net/http/pprof under /debug/pprof/, behind the operator token.
	Pprof bool `json:"pprof"`
}

func (o *OpsConfig) resolve(dataDir string) error {
	if o.KeyHistoryFile == "" {
		o.KeyHistoryFile = filepath.Join(dataDir, "service-key-history.json")
	}
	if o.OTLPEndpoint != "" {
		u, err := url.Parse(o.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: ops.otlpEndpoint %q must be an http:// or https:// URL", o.OTLPEndpoint)
		}
	}
	if o.TraceSampleRatio < 0 || o.TraceSampleRatio > 1 {
		return errors.New("config: ops.traceSampleRatio must be between 0 and 1")
	}
	if o.TraceSampleRatio == 0 {
		o.TraceSampleRatio = 1
	}
	return nil
}
