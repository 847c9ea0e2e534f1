package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdUnit: systemd-analyze verify finds nothing to say about the unit (with
// ExecStart pointing at a built sealtraild), and its offline security analysis rates
// the exposure at most 2.0 ("OK").
func TestSystemdUnit(t *testing.T) {
	analyze := tool(t, "systemd-analyze")
	root := repoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "sealtraild")
	run(t, 10*time.Minute, root, "go", "build", "-o", bin, "./cmd/sealtraild")
	unit, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "sealtraild.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/sealtraild ") {
		t.Fatal("the unit's ExecStart does not run /usr/local/bin/sealtraild")
	}
	path := filepath.Join(dir, "sealtraild.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/sealtraild", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure above 2.0 (%v)\n%s", err, out)
	}
	if !strings.Contains(string(out), "Overall exposure level for sealtraild.service") {
		t.Fatalf("systemd-analyze security gave no rating:\n%s", out)
	}
}
