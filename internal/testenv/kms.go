package testenv

import (
	"context"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Binary returns the path of an installed peer binary: on PATH, else in $GOPATH/bin
// (where .ci/install.d puts Go-built peers). Without it the test skips, or fails under
// CI=true.
func Binary(t testing.TB, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join(build.Default.GOPATH, "bin", name); isExecutable(p) {
		return p
	}
	if InCI() {
		t.Fatalf("%s is required under CI=true but is not installed (%s)", name, install)
	}
	t.Skipf("%s not installed (%s)", name, install)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// LocalKMS is a local-kms process (an AWS KMS emulator) on a free loopback port, with
// its keys in a directory of the test's. Stop and Start take it away and bring it back
// on the same port with the same keys, as a KMS outage would.
type LocalKMS struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string
	// Region and AccountID are those it was started with.
	Region, AccountID string

	t        testing.TB
	bin, dir string
	port     int
	mu       sync.Mutex
	cmd      *exec.Cmd
	waitDone chan struct{}
}

// StartLocalKMS starts local-kms (.ci/install.d/40-local-kms.sh installs it) and
// stops it when the test ends. Without the binary the test skips, or fails under CI.
func StartLocalKMS(t testing.TB) *LocalKMS {
	t.Helper()
	bin := Binary(t, "local-kms", ".ci/install.d/40-local-kms.sh")
	k := &LocalKMS{Region: "eu-west-1", AccountID: "111122223333", t: t, bin: bin, dir: t.TempDir(), port: freePort(t)}
	k.Endpoint = "http://127.0.0.1:" + strconv.Itoa(k.port)
	k.Start()
	t.Cleanup(k.Stop)
	return k
}

// Start starts the process (again) and waits until it accepts connections.
func (k *LocalKMS) Start() {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd != nil {
		return
	}
	cmd := exec.Command(k.bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(k.port), "KMS_REGION="+k.Region,
		"KMS_ACCOUNT_ID="+k.AccountID, "KMS_DATA_PATH="+filepath.Join(k.dir, "data"))
	logf, err := os.OpenFile(filepath.Join(k.dir, "local-kms.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		k.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		k.t.Fatalf("start local-kms: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	k.cmd, k.waitDone = cmd, done
	addr := "127.0.0.1:" + strconv.Itoa(k.port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(k.dir, "local-kms.log"))
			k.t.Fatalf("local-kms exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("local-kms did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the process and waits for it to exit; its port refuses connections.
func (k *LocalKMS) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Kill()
	<-k.waitDone
	k.cmd = nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(fmt.Errorf("free port: %w", err))
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// SoftHSMModule is where Debian's softhsm2 puts its PKCS#11 module.
const SoftHSMModule = "/usr/lib/softhsm/libsofthsm2.so"

// SoftHSM is a throwaway SoftHSM2 token: its own token directory, named to the module
// by SOFTHSM2_CONF for the rest of the test (so the test must not call t.Parallel).
type SoftHSM struct {
	Module, TokenLabel, PIN string
}

// StartSoftHSM initializes a fresh token labelled "sealtrail" with user PIN 1234 in a
// directory of the test's (.ci/install.d/40-softhsm2.sh installs SoftHSM2). Without
// SoftHSM2 the test skips, or fails under CI.
func StartSoftHSM(t *testing.T) *SoftHSM {
	t.Helper()
	util := Binary(t, "softhsm2-util", ".ci/install.d/40-softhsm2.sh")
	if !isFile(SoftHSMModule) {
		if InCI() {
			t.Fatalf("%s is required under CI=true (.ci/install.d/40-softhsm2.sh)", SoftHSMModule)
		}
		t.Skipf("%s not installed (.ci/install.d/40-softhsm2.sh)", SoftHSMModule)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.Mkdir(tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "softhsm2.conf")
	body := "directories.tokendir = " + tokens + "\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", conf)
	h := &SoftHSM{Module: SoftHSMModule, TokenLabel: "sealtrail", PIN: "1234"}
	out, err := exec.Command(util, "--init-token", "--free", "--label", h.TokenLabel, "--pin", h.PIN, "--so-pin", "5678").CombinedOutput()
	if err != nil {
		t.Fatalf("softhsm2-util --init-token: %v: %s", err, out)
	}
	return h
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
