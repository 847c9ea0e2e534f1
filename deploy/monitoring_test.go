package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAlertRules: promtool accepts the rules and their unit tests pass (an alert that
// must fire fires, with its labels and text).
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	dir := filepath.Join(repoRoot(t), "deploy", "prometheus")
	if out := run(t, time.Minute, dir, promtool, "check", "rules", "sealtrail-rules.yaml"); !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	if out := run(t, time.Minute, dir, promtool, "test", "rules", "sealtrail-rules.test.yaml"); !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules:\n%s", out)
	}
}

// TestMonitoringMetricsExist: every sealtrail_* metric that the dashboard and the rules
// query is one the service registers (named in a Go source of httpapi or sequencer),
// and the dashboard is JSON with panels that each have a query.
func TestMonitoringMetricsExist(t *testing.T) {
	root := repoRoot(t)
	var src strings.Builder
	for _, pkg := range []string{"httpapi", "sequencer"} {
		files, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
	}
	metric := regexp.MustCompile(`sealtrail_[a-z_]+`)
	for _, f := range []string{"grafana/sealtrail-dashboard.json", "prometheus/sealtrail-rules.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		names := metric.FindAllString(string(b), -1)
		if len(names) < 5 {
			t.Fatalf("%s queries only %v", f, names)
		}
		for _, n := range names {
			base := strings.TrimSuffix(n, "_bucket")
			if !strings.Contains(src.String(), `"`+base+`"`) {
				t.Errorf("%s queries %s, which the service does not register", f, n)
			}
		}
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, _ := os.ReadFile(filepath.Join(root, "deploy", "grafana", "sealtrail-dashboard.json"))
	if err := json.Unmarshal(b, &dash); err != nil || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard: %v (uid %q, %d panels)", err, dash.UID, len(dash.Panels))
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 || p.Targets[0].Expr == "" {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
}
