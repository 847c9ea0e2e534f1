package httpapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// redoclyPrefix is where .ci/install.d/30-redocly.sh installs the pinned linter.
const redoclyPrefix = "/opt/sealtrail/redocly"

// TestOpenAPILint lints openapi.json with the pinned redocly (recommended rules, the
// exceptions in redocly.yaml with their reasons) and requires no error and no warning:
// among others every operation has an operationId and a 4xx response. Without the
// linter it skips locally and fails under CI=true.
func TestOpenAPILint(t *testing.T) {
	prefix := os.Getenv("SEALTRAIL_REDOCLY_PREFIX")
	if prefix == "" {
		prefix = redoclyPrefix
	}
	bin := filepath.Join(prefix, "node_modules", ".bin", "redocly")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redocly is not installed in %s (.ci/install.d/30-redocly.sh installs it)", prefix)
		}
		t.Skipf("redocly not installed in %s; .ci/install.d/30-redocly.sh installs it", prefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The installed linter is the pinned one.
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile(filepath.Join("..", ".ci", "redocly", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	want := pkg.Dependencies["@redocly/cli"]
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != want {
		t.Fatalf("redocly --version = %q (%v), want the pinned %q: rerun .ci/install.d/30-redocly.sh", got, err, want)
	}

	cmd := exec.CommandContext(ctx, bin, "lint", "--config", "redocly.yaml", "--format=json", "openapi.json")
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var report struct {
		Totals struct {
			Errors   int `json:"errors"`
			Warnings int `json:"warnings"`
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly lint: %v (%v)\n%s%s", err, runErr, out, stderr.String())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors+report.Totals.Warnings > 0 || runErr != nil {
		t.Fatalf("redocly lint: %d errors, %d warnings (%v)", report.Totals.Errors, report.Totals.Warnings, runErr)
	}
}
