package testenv

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Witness is a running C2SP tlog-witness (omniwitness) on loopback.
type Witness struct {
	// URL is its base URL: add-checkpoint is URL + "/add-checkpoint".
	URL string
	// VerifierKey is its signed-note verifier key (Ed25519).
	VerifierKey string
}

// WitnessedLog is a log a witness accepts checkpoints of.
type WitnessedLog struct {
	Origin      string
	VerifierKey string // the log's signed-note verifier key
}

// Omniwitness starts omniwitness (.ci/install.d/40-omniwitness.sh) on free loopback
// ports with a fresh key and database, witnessing logs, and stops it at the end of the
// test. Without the binary the test skips, or fails under CI=true.
func Omniwitness(t testing.TB, logs ...WitnessedLog) Witness {
	t.Helper()
	bin, err := exec.LookPath("omniwitness")
	if err != nil {
		if gp, gerr := exec.Command("go", "env", "GOPATH").Output(); gerr == nil {
			cand := filepath.Join(strings.TrimSpace(string(gp)), "bin", "omniwitness")
			if _, serr := os.Stat(cand); serr == nil {
				bin, err = cand, nil
			}
		}
	}
	if err != nil {
		if InCI() {
			t.Fatalf("omniwitness is required under CI=true but not installed (.ci/install.d/40-omniwitness.sh)")
		}
		t.Skip("omniwitness not installed (run .ci/install.d/40-omniwitness.sh)")
	}
	dir := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, "sealtrail-test-witness")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "witness.skey")
	var yaml strings.Builder
	yaml.WriteString("Logs:\n")
	for _, l := range logs {
		fmt.Fprintf(&yaml, "  - Origin: %q\n    PublicKey: %q\n    URL: \"http://127.0.0.1:1/unused\"\n", l.Origin, l.VerifierKey)
	}
	logsFile := filepath.Join(dir, "logs.yaml")
	if err := os.WriteFile(keyFile, []byte(skey), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logsFile, []byte(yaml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, metrics := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "--listen="+addr, "--metrics_listen="+metrics, "--db_file="+filepath.Join(dir, "w.db"),
		"--private_key_path="+keyFile, "--additional_logs="+logsFile)
	out, err := os.Create(filepath.Join(dir, "omniwitness.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start omniwitness: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		out.Close()
		if t.Failed() {
			if b, err := os.ReadFile(out.Name()); err == nil {
				t.Logf("omniwitness output:\n%s", tail(b, 4000))
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("omniwitness did not listen on %s within 30 s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return Witness{URL: "http://" + addr, VerifierKey: vkey}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
