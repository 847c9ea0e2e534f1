package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// PeerBinary returns the path of the installed peer binary name: from PATH, else from
// $GOPATH/bin, where the .ci/install.d scripts put it. Without it the test skips
// locally and fails under CI=true, naming the script that installs it.
func PeerBinary(t testing.TB, name, installScript string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if InCI() {
		t.Fatalf("%s is required under CI=true but is not installed (run %s)", name, installScript)
	}
	t.Skipf("%s not installed (run %s)", name, installScript)
	return ""
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago
// (the kernel picked them; a peer started right after binds them).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testenv: free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// StartPeer runs bin with args in dir, its output in dir/<name>.log, and waits until
// ready returns nil (polled every 50ms, for at most a minute). The process is killed
// and reaped when the test ends. If it exits or never gets ready, the test fails with
// the tail of its log.
func StartPeer(t testing.TB, name, dir, bin string, args []string, ready func(context.Context) error) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("testenv: %s log: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("testenv: start %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		err := ready(rctx)
		rcancel()
		if err == nil {
			return
		}
		select {
		case werr := <-exited:
			exited <- werr // for the cleanup
			t.Fatalf("testenv: %s exited before it was ready (%v): %s", name, werr, logTail(logPath))
		case <-ctx.Done():
			t.Fatalf("testenv: %s not ready after a minute (%v): %s", name, err, logTail(logPath))
		case <-tick.C:
		}
	}
}

// logTail returns the last lines of a peer's log for a failure message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(log %s: %v)", path, err)
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// dialReady is a readiness check: the peer accepts TCP connections on addr.
func dialReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

var errNotReady = errors.New("not ready")
