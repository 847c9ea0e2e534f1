package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration of sealtraild serve: the one schema, read from a
// JSON file (--config), then SEALTRAIL_<FIELD> environment variables (e.g.
// SEALTRAIL_LISTEN, SEALTRAIL_CATALOG), then the few flags. With nothing set, the
// service runs on the embedded default under ./data.
type Config struct {
	// Listen is the HTTP listen address.
	Listen string `json:"listen"`
	// DataDir holds the embedded catalog, the filesystem store and the key files
	// whose paths are not given.
	DataDir string `json:"dataDir"`
	// Catalog is "sqlite:<path>" (default <DataDir>/catalog.db) or a PostgreSQL URL
	// "postgres://user:pass@host:5432/db".
	Catalog string `json:"catalog"`
	// Store is the object store URL: file:///path (default <DataDir>/objects),
	// s3://bucket/prefix?endpoint=..., gs://bucket/prefix (see docs/storage.md).
	Store string `json:"store"`
	// SigningKeyFile holds the service Ed25519 key (hex seed, mode 0600); created on
	// first start. It signs checkpoints, tree heads and receipts.
	SigningKeyFile string `json:"signingKeyFile"`
	// KEKFile holds the key-encryption key that wraps payload data keys; created on
	// first start. Losing it loses every payload.
	KEKFile string `json:"kekFile"`
	// KEK selects the key-encryption key: the file above, or a KMS (config_kek.go).
	KEK KEKConfig `json:"kek"`
	// OperatorTokenFile holds the operator API token; created on first start.
	OperatorTokenFile string `json:"operatorTokenFile"`
	// Origin names this service in checkpoint origins: <origin>/<projectId>/<stream>.
	Origin string `json:"origin"`
	// MaxBatch and MaxAgeMS tune the sequencer's batches (defaults 10000 and 0 ms:
	// batches grow with load by themselves; raise MaxAgeMS on S3 or GCS).
	MaxBatch int `json:"maxBatch"`
	MaxAgeMS int `json:"maxAgeMs"`
	// RateLimit is the ingest limit per API key per 10 s (default 500, the spec's); an
	// operator can override it per project (admin project rate-limit). ReadRateLimit
	// bounds each of /verify and /export per project per minute (default 10), and
	// AuthFailureLimit failed authentications per client address per minute (default
	// 60). All are token buckets, and per replica.
	RateLimit        int `json:"rateLimit"`
	ReadRateLimit    int `json:"readRateLimit"`
	AuthFailureLimit int `json:"authFailureLimit"`
	// MaxBatchEvents bounds the events of one POST /api/v1/log/batch (default 1000).
	MaxBatchEvents int `json:"maxBatchEvents"`
	// TrustProxyHeaders takes client addresses from the last X-Forwarded-For entry;
	// without it the header is ignored.
	TrustProxyHeaders bool `json:"trustProxyHeaders"`
	// HTTP server limits: the time to read a request's headers (default 10 s), the
	// whole request, body included (default 60 s), to write a response (default 60 s;
	// /export and /verify instead get this much per write), the keep-alive idle time
	// (default 120 s), and the size of the request headers (default 16 KiB; larger is
	// 431).
	ReadHeaderTimeoutMS int `json:"readHeaderTimeoutMs"`
	ReadTimeoutMS       int `json:"readTimeoutMs"`
	WriteTimeoutMS      int `json:"writeTimeoutMs"`
	IdleTimeoutMS       int `json:"idleTimeoutMs"`
	MaxHeaderBytes      int `json:"maxHeaderBytes"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"logLevel"`
	// Mail configures email: SMTP delivery and digests (config_mail.go).
	Mail MailConfig `json:"mail"`
	// Dashboard configures the web dashboard (config_dashboard.go); its mail goes
	// through Mail.
	Dashboard DashboardConfig `json:"dashboard"`
	SIEMConfig
	// Ops: the service key history, tracing and profiling (config_ops.go).
	Ops OpsConfig `json:"ops"`
	// Anchor configures the tree_heads log and its publication (config_anchor.go).
	Anchor AnchorConfig `json:"anchor"`
	// Retention configures the retention job (config_retention.go).
	Retention RetentionConfig `json:"retention"`
	// Publish configures the publication rounds (config_publish.go).
	Publish PublishConfig `json:"publish"`
}

func defaultConfig() Config {
	return Config{Listen: "127.0.0.1:8080", DataDir: "data", Origin: "sealtrail.localhost", LogLevel: "info",
		ReadHeaderTimeoutMS: 10_000, ReadTimeoutMS: 60_000, WriteTimeoutMS: 60_000, IdleTimeoutMS: 120_000,
		MaxHeaderBytes: 16 << 10}
}

// loadConfig applies the file at path (if any) and the environment to c.
func (c *Config) load(path string) error {
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c); err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
	}
	return applyEnv(reflect.ValueOf(c).Elem(), "SEALTRAIL_")
}

// applyEnv sets each field of the struct v from the environment variable prefix +
// its JSON name in upper snake case. A nested struct takes the same JSON as in the
// file from its own variable (SEALTRAIL_KEK='{"type":...}'), then each of its fields
// from the variable with its name as a further prefix (ops.otlpEndpoint:
// SEALTRAIL_OPS_OTLP_ENDPOINT); an embedded area config (SIEMConfig) adds no prefix.
func applyEnv(v reflect.Value, prefix string) error {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := applyEnv(v.Field(i), prefix); err != nil {
				return err
			}
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		env := prefix + strings.ToUpper(toSnake(name))
		raw, ok := os.LookupEnv(env)
		if f.Type.Kind() == reflect.Struct {
			if ok {
				dec := json.NewDecoder(strings.NewReader(raw))
				dec.DisallowUnknownFields()
				if err := dec.Decode(v.Field(i).Addr().Interface()); err != nil {
					return fmt.Errorf("config: %s: %w", env, err)
				}
			}
			if err := applyEnv(v.Field(i), env+"_"); err != nil {
				return err
			}
			continue
		}
		if !ok {
			continue
		}
		switch f.Type.Kind() {
		case reflect.String:
			v.Field(i).SetString(raw)
		case reflect.Int:
			n, err := strconv.Atoi(raw)
			if err != nil {
				return fmt.Errorf("config: %s=%q is not an integer", env, raw)
			}
			v.Field(i).SetInt(int64(n))
		case reflect.Bool:
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return fmt.Errorf("config: %s=%q is not a boolean", env, raw)
			}
			v.Field(i).SetBool(b)
		case reflect.Float64:
			x, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return fmt.Errorf("config: %s=%q is not a number", env, raw)
			}
			v.Field(i).SetFloat(x)
		}
	}
	return nil
}

func toSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// resolve fills derived defaults and checks the configuration.
func (c *Config) resolve() error {
	if c.DataDir == "" {
		return errors.New("config: dataDir must not be empty")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("config: dataDir: %w", err)
	}
	c.DataDir = abs
	if c.Catalog == "" {
		c.Catalog = "sqlite:" + filepath.Join(c.DataDir, "catalog.db")
	}
	if !strings.HasPrefix(c.Catalog, "sqlite:") && !strings.HasPrefix(c.Catalog, "postgres://") && !strings.HasPrefix(c.Catalog, "postgresql://") {
		return fmt.Errorf("config: catalog %q must be sqlite:<path> or a postgres:// URL", redact(c.Catalog))
	}
	if c.Store == "" {
		c.Store = "file://" + filepath.Join(c.DataDir, "objects")
	}
	if c.SigningKeyFile == "" {
		c.SigningKeyFile = filepath.Join(c.DataDir, "service.key")
	}
	if c.KEKFile == "" {
		c.KEKFile = filepath.Join(c.DataDir, "kek.key")
	}
	if err := c.KEK.resolve(c.KEKFile); err != nil {
		return err
	}
	if c.OperatorTokenFile == "" {
		c.OperatorTokenFile = filepath.Join(c.DataDir, "operator.token")
	}
	if c.Origin == "" || strings.ContainsAny(c.Origin, " \t\n+") {
		return fmt.Errorf("config: origin %q must be non-empty, without spaces or '+'", c.Origin)
	}
	if c.MaxBatch < 0 || c.MaxAgeMS < 0 || c.RateLimit < 0 || c.ReadRateLimit < 0 || c.AuthFailureLimit < 0 || c.MaxBatchEvents < 0 {
		return errors.New("config: maxBatch, maxAgeMs, rateLimit, readRateLimit, authFailureLimit and maxBatchEvents must not be negative")
	}
	if c.ReadHeaderTimeoutMS <= 0 || c.ReadTimeoutMS <= 0 || c.WriteTimeoutMS <= 0 || c.IdleTimeoutMS <= 0 || c.MaxHeaderBytes <= 0 {
		return errors.New("config: readHeaderTimeoutMs, readTimeoutMs, writeTimeoutMs, idleTimeoutMs and maxHeaderBytes must be positive")
	}
	if c.ReadHeaderTimeoutMS > c.ReadTimeoutMS {
		return errors.New("config: readHeaderTimeoutMs must not exceed readTimeoutMs (which includes the headers)")
	}
	if err := c.SIEMConfig.check(); err != nil {
		return err
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: logLevel %q must be debug, info, warn or error", c.LogLevel)
	}
	if err := c.Dashboard.resolve(); err != nil {
		return err
	}
	if err := c.Mail.resolve(c.Dashboard.publicHost()); err != nil {
		return err
	}
	if err := c.Publish.check(); err != nil {
		return err
	}
	if err := c.Ops.resolve(c.DataDir); err != nil {
		return err
	}
	return c.Anchor.check()
}

func (c *Config) maxAge() time.Duration { return ms(c.MaxAgeMS) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// redact hides a password in a URL for messages.
func redact(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				return s[:i+3] + rest[:colon] + ":***" + rest[at:]
			}
		}
	}
	return s
}
