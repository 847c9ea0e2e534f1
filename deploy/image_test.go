package deploy

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestImage builds the Dockerfile with buildah and runs `sealtraild serve --dev` in the
// image as its unprivileged user until /readyz answers.
//
// No registry is reachable from the machines this runs on, so the two base images
// (golang and distroless) are replaced by local stand-ins made from scratch: the
// builder holds this machine's Go toolchain, the runtime only /etc/passwd with the
// nonroot user and its home, as distroless's does. Modules come from this machine's
// module cache (GOPROXY=off). The Dockerfile itself is built unchanged. Containers run
// with buildah's chroot isolation: podman and runc cannot set rlimits in this sandbox.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image: minutes")
	}
	buildah := tool(t, "buildah")
	root := repoRoot(t)
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	goImage, rtImage, image := "localhost/sealtrail-test-go:"+tag, "localhost/sealtrail-test-runtime:"+tag, "localhost/sealtrail-test:"+tag
	t.Cleanup(func() { _ = exec.Command(buildah, "rmi", "-f", image, goImage, rtImage).Run() })

	goroot := strings.TrimSpace(run(t, time.Minute, root, "go", "env", "GOROOT"))
	modcache := strings.TrimSpace(run(t, time.Minute, root, "go", "env", "GOMODCACHE"))
	gocache := strings.TrimSpace(run(t, time.Minute, root, "go", "env", "GOCACHE"))
	empty := t.TempDir()
	// The builder stand-in: scratch and a Go toolchain.
	ctr := strings.TrimSpace(run(t, time.Minute, root, buildah, "from", "scratch"))
	run(t, 5*time.Minute, root, buildah, "copy", ctr, goroot, "/usr/local/go")
	run(t, time.Minute, root, buildah, "copy", ctr, empty, "/tmp")
	run(t, time.Minute, root, buildah, "config", "--env", "PATH=/usr/local/go/bin", "--env", "HOME=/root",
		"--env", "GOTOOLCHAIN=local", "--env", "TMPDIR=/tmp", ctr)
	run(t, 5*time.Minute, root, buildah, "commit", "--rm", ctr, goImage)
	// The runtime stand-in: what distroless static nonroot has that the service uses.
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctr = strings.TrimSpace(run(t, time.Minute, root, buildah, "from", "scratch"))
	run(t, time.Minute, root, buildah, "copy", ctr, passwd, "/etc/passwd")
	run(t, time.Minute, root, buildah, "copy", "--chown", "65532:65532", ctr, empty, "/home/nonroot")
	run(t, time.Minute, root, buildah, "copy", ctr, empty, "/tmp")
	run(t, 5*time.Minute, root, buildah, "commit", "--rm", ctr, rtImage)

	out := run(t, 20*time.Minute, root, buildah, "bud", "--isolation", "chroot", "--layers=false",
		"--build-arg", "GO_IMAGE="+goImage, "--build-arg", "RUNTIME_IMAGE="+rtImage,
		"--build-arg", "GOPROXY=off", "--build-arg", "GOFLAGS=-mod=mod",
		"--build-arg", "GOMODCACHE=/gomodcache", "--build-arg", "GOCACHE=/gocache",
		"-v", modcache+":/gomodcache", "-v", gocache+":/gocache",
		"-t", image, "-f", "Dockerfile", ".")
	t.Logf("build: %s", lastLines(out, 3))
	cfg := run(t, time.Minute, root, buildah, "inspect", "--type", "image", "--format", "{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}}", image)
	if !strings.HasPrefix(cfg, "65532:65532 ") || !strings.Contains(cfg, "/usr/local/bin/sealtraild") {
		t.Fatalf("image config: %s, want user 65532:65532 and the sealtraild entrypoint", cfg)
	}

	// Run the image's sealtraild serve --dev.
	ctr = strings.TrimSpace(run(t, time.Minute, root, buildah, "from", image))
	t.Cleanup(func() { _ = exec.Command(buildah, "rm", ctr).Run() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs testenv.Output
	cmd := exec.Command(buildah, "run", "--isolation", "chroot", "--user", "65532:65532", ctr, "--",
		"/usr/local/bin/sealtraild", "serve", "--dev", "--listen", addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("sealtraild in the image exited (%v):\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sealtraild in the image not ready (%v):\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// serve --dev prints the demo project after it starts serving, so /readyz can
	// answer before the text is out: wait for it too.
	for !strings.Contains(logs.String(), "API key (all scopes, shown once)") {
		if time.Now().After(deadline) {
			t.Fatalf("serve --dev in the image did not print the demo project:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
