package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binPath is the sealtrail binary TestMain builds; the CLI tests run it as a subprocess,
// as an auditor would.
var binPath string

// tmpRoot holds the binary and anything tests share across runs (the benchmark export).
var tmpRoot string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var err error
	tmpRoot, err = os.MkdirTemp("", "sealtrail-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		return 1
	}
	defer os.RemoveAll(tmpRoot)
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain: the go command is needed to build sealtrail:", err)
		return 1
	}
	binPath = filepath.Join(tmpRoot, "sealtrail")
	build := exec.Command(gobin, "build", "-o", binPath, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "TestMain: go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// cliResult is what one run of the binary produced.
type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// sealtrail runs the binary with args, feeding it stdin (which may be nil).
func sealtrail(t testing.TB, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		t.Fatalf("run sealtrail %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// expect checks a run's exit code and that stderr (for failures) or stdout (for
// success) contains each of want.
func expect(t *testing.T, r cliResult, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\n%s", r.code, code, r)
	}
	out := r.stdout
	if code != exitOK {
		out = r.stderr
		// Exit 2 is exactly one line on stderr; exit 1 is one line on stderr too.
		if !strings.HasSuffix(r.stderr, "\n") || strings.Count(r.stderr, "\n") != 1 {
			t.Fatalf("stderr is not exactly one line\n%s", r)
		}
		if !strings.HasPrefix(r.stderr, "sealtrail: ") {
			t.Fatalf("stderr does not start with \"sealtrail: \"\n%s", r)
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q\n%s", w, r)
		}
	}
}

// writeFile writes data to a new file under t.TempDir and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
