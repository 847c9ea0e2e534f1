//go:build unix

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestFileModes runs the real binary under umask 0 (so nothing is private by accident)
// and checks that every file and folder it creates in its data directory is private to
// its user; then that it refuses to start, with a one-line message naming the file and
// the fix, on each secret made readable by others and on a data directory others can
// enter, and leaves that directory's mode as the operator set it.
func TestFileModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "serve.sh")
	body := fmt.Sprintf("#!/bin/sh\numask 0\nexec %q serve --listen 127.0.0.1:0 --dev\n", sealtraild)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	s := startScript(t, dir, script)
	km := demoKeyRe.FindStringSubmatch(s.waitOutput("restarting keeps every project"))
	if km == nil {
		t.Fatal("dev banner lacks the API key")
	}
	s.mustLog(km[1], "file.modes")

	// While it runs, so the catalog's WAL and shared-memory files exist.
	kinds := map[string]bool{}
	for _, rel := range testenv.PrivateTree(t, s.dataDir) {
		kind, _, _ := strings.Cut(rel, "/")
		if kind == "objects" {
			fi, err := os.Stat(filepath.Join(s.dataDir, rel))
			if err != nil {
				continue // a temporary file renamed meanwhile
			}
			kind = "object"
			if fi.IsDir() {
				kind = "objects folder"
			}
		}
		kinds[kind] = true
	}
	for _, k := range []string{".", "catalog.db", "catalog.db-wal", "catalog.db-shm", "catalog.db-terms",
		"objects folder", "object", "service.key", "kek.key", "operator.token", "dev-project"} {
		if !kinds[k] {
			t.Errorf("no %q in the data directory (saw %v)", k, kinds)
		}
	}
	s.stop()

	refused := func(path, fix string) {
		t.Helper()
		r := runCLI(t, dir, "serve", "--listen", "127.0.0.1:0")
		msg := strings.TrimSuffix(r.stderr, "\n")
		if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, path+" has mode") || !strings.Contains(msg, fix) {
			t.Fatalf("serve with %s open: exit %d, stderr %q; want exit 2 and one line naming it and %q", path, r.code, r.stderr, fix)
		}
	}
	for _, name := range []string{"service.key", "operator.token", "kek.key"} {
		p := filepath.Join(s.dataDir, name)
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		refused(p, "chmod 600 "+p)
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(s.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	refused(s.dataDir, "chmod 700 "+s.dataDir)
	if fi, err := os.Stat(s.dataDir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("after the refusal the data directory is %v (%v), want it left at 0755", fi.Mode(), err)
	}
}
