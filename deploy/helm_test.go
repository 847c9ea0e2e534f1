package deploy

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHelmChart: helm lint passes; helm template renders a Deployment with the
// health probes on /healthz and /readyz, the three key files from a Secret, a
// PodDisruptionBudget and a config.json the service accepts; and the chart refuses
// several replicas on the embedded catalog.
func TestHelmChart(t *testing.T) {
	helm := tool(t, "helm")
	chart := filepath.Join(repoRoot(t), "deploy", "helm", "sealtrail")
	lint := run(t, 2*time.Minute, chart, helm, "lint", "--strict", chart)
	if !strings.Contains(lint, "0 chart(s) failed") {
		t.Fatalf("helm lint:\n%s", lint)
	}
	out := run(t, 2*time.Minute, chart, helm, "template", "audit", chart, "--set", "replicaCount=3")
	for _, want := range []string{
		"kind: Deployment", "replicas: 3", "kind: PodDisruptionBudget", "maxUnavailable: 1", "kind: Service",
		"path: /healthz", "path: /readyz", "secretName: sealtrail-keys", "runAsNonRoot: true",
		"readOnlyRootFilesystem: true", "name: SEALTRAIL_CATALOG",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("helm template lacks %q", want)
		}
	}
	// The config.json of the ConfigMap: JSON, with what the chart owns.
	_, after, ok := strings.Cut(out, "config.json: |\n")
	if !ok {
		t.Fatalf("no config.json in:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "    ") {
			break
		}
		lines = append(lines, l)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(strings.Join(lines, "\n")), &cfg); err != nil {
		t.Fatalf("config.json: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if cfg["signingKeyFile"] != "/var/lib/sealtrail/keys/service.key" || cfg["listen"] != "0.0.0.0:8080" {
		t.Fatalf("config.json: %v", cfg)
	}

	cmd := exec.Command(helm, "template", "audit", chart, "--set", "catalogSecret.name=")
	if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "replicaCount > 1 needs PostgreSQL") {
		t.Fatalf("several replicas on SQLite: %v\n%s", err, msg)
	}
	run(t, 2*time.Minute, chart, helm, "template", "audit", chart, "--set", "catalogSecret.name=", "--set", "replicaCount=1", "--set", "config.store=")
}
