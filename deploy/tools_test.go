package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// tool returns the path of the named program (also looked for in $(go env
// GOPATH)/bin, where the install scripts put the Go-built ones), skipping the test
// without it (failing under CI=true).
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(string(bytes.TrimSpace(out)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := name + " is not installed (.ci/install.d/40-deploy-tools.sh installs it)"
	if testenv.InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// run runs a command with a deadline and returns its combined output; a failure
// fails the test with that output.
func run(t *testing.T, timeout time.Duration, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// repoRoot is the repository's root folder, the parent of this package's.
func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
