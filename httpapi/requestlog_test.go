package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
)

// TestRequestLogLine checks the line every request logs at INFO: its fields, the
// request id the response carries, and nothing at all when INFO is off.
func TestRequestLogLine(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		var out testenv.Output
		cat := openCatalog(t, "sqlite")
		s := startStack(t, cat, keyring.New(cat, stacktest.KEK(t), keyring.Options{}), 1, time.Millisecond, func(c *Config) {
			c.Logger = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: level}))
		})
		r := httptest.NewRequest(http.MethodGet, "/api/v1/root?stream=events", nil)
		r.Header.Set("Authorization", "Bearer "+s.token)
		r.Header.Set("X-Request-Id", "req-42")
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, r)
		if got := rec.Header().Get("X-Request-Id"); got != "req-42" {
			t.Fatalf("X-Request-Id = %q", got)
		}
		var line map[string]any
		for l := range strings.Lines(out.String()) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			if m["msg"] == "request" {
				line = m
			}
		}
		if level > slog.LevelInfo {
			if line != nil {
				t.Fatalf("level %v: request line logged: %v", level, line)
			}
			continue
		}
		if line == nil {
			t.Fatalf("no request line in %q", out.String())
		}
		want := map[string]any{"level": "INFO", "request_id": "req-42", "method": "GET", "path": "/api/v1/root",
			"status": float64(rec.Code)}
		for k, v := range want {
			if line[k] != v {
				t.Errorf("%s = %v, want %v (line %v)", k, line[k], v, line)
			}
		}
		if d, ok := line["duration"].(float64); !ok || d <= 0 {
			t.Errorf("duration = %v, want a positive number of nanoseconds", line["duration"])
		}
		ts, ok := line["time"].(string)
		if at, err := time.Parse(time.RFC3339Nano, ts); !ok || err != nil || time.Since(at) > time.Minute || time.Since(at) < 0 {
			t.Errorf("time = %v, want the time of the request", line["time"])
		}
	}
}
