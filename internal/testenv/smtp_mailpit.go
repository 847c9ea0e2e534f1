package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MailpitServer is a mailpit SMTP server started for one test: mail sent to SMTPAddr
// is read back over its HTTP API.
type MailpitServer struct {
	SMTPAddr string // host:port
	API      string // http://host:port
}

// installedBinary finds a binary installed by .ci/install.d on PATH or in $GOPATH/bin (or
// ~/go/bin); empty if missing.
func installedBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	dirs := []string{}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// skipOrFailMissing skips the test for a missing binary, or fails it under CI=true.
func skipOrFailMissing(t testing.TB, what, install string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is required under CI=true but is not installed (%s)", what, install)
	}
	t.Skipf("%s not installed (run %s)", what, install)
}

// freeLoopbackAddr returns a free 127.0.0.1 port's address.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// StartMailpit starts mailpit (.ci/install.d/40-mailpit.sh) on free ports of
// 127.0.0.1 and stops it when the test ends. Without the binary the test skips, or
// fails under CI=true.
func StartMailpit(t testing.TB) *MailpitServer {
	t.Helper()
	bin := installedBinary("mailpit")
	if bin == "" {
		skipOrFailMissing(t, "mailpit", ".ci/install.d/40-mailpit.sh")
	}
	smtpAddr, httpAddr := freeLoopbackAddr(t), freeLoopbackAddr(t)
	cmd := exec.Command(bin, "--smtp="+smtpAddr, "--listen="+httpAddr, "--disable-version-check",
		"--database="+filepath.Join(t.TempDir(), "mailpit.db"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mailpit: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	m := &MailpitServer{SMTPAddr: smtpAddr, API: "http://" + httpAddr}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(m.API + "/api/v1/messages")
		if err == nil {
			res.Body.Close()
			if c, err := net.Dial("tcp", smtpAddr); err == nil {
				c.Close()
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit did not start: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LatestText returns the plain-text body of the newest message to the address to,
// waiting up to 10 s for one to arrive.
func (m *MailpitServer) LatestText(ctx context.Context, to string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list struct {
			Messages []struct {
				ID string `json:"ID"`
			} `json:"messages"`
		}
		if err := m.get(ctx, "/api/v1/search?query="+url.QueryEscape("to:"+to), &list); err != nil {
			return "", err
		}
		if len(list.Messages) > 0 {
			var msg struct {
				Text string `json:"Text"`
			}
			if err := m.get(ctx, "/api/v1/message/"+url.PathEscape(list.Messages[0].ID), &msg); err != nil {
				return "", err
			}
			return msg.Text, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("mailpit: no message to %s", to)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *MailpitServer) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.API+path, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("mailpit %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("mailpit %s: %s", path, res.Status)
	}
	return json.NewDecoder(res.Body).Decode(v)
}

// Chromium returns the path of the Debian chromium (.ci/install.d/40-chromium.sh).
// Without it the test skips, or fails under CI=true.
func Chromium(t testing.TB) string {
	t.Helper()
	const path = "/usr/bin/chromium"
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		skipOrFailMissing(t, "chromium", ".ci/install.d/40-chromium.sh")
	}
	return path
}
