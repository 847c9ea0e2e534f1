package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// Tests and examples run against the real service: TestMain builds ./cmd/sealtraild
// and ./cmd/sealtrail into a temporary directory, starts `sealtraild serve --dev` on a
// loopback port with a temporary data directory, creates a second project that
// requires signed events, and exports what the examples read:
//
//	SEALTRAIL_URL, SEALTRAIL_API_KEY                   the dev project (unsigned)
//	SEALTRAIL_SIGNED_API_KEY, SEALTRAIL_SIGNING_KEY_ID,
//	SEALTRAIL_SIGNING_PRIVATE_KEY                      the signed project
//
// It stops the service (SIGTERM to its PID) when the tests are done.

// service is a running sealtraild.
type service struct {
	dir           string // temporary root: bin/, data/
	base          string // http://127.0.0.1:<port>
	apiKey        string // the dev project's key, all scopes
	operatorToken string
	cmd           *exec.Cmd
	exited        chan struct{}
	stderr        bytes.Buffer // guarded by stderrMu
	stderrMu      sync.Mutex
}

// svc is the service TestMain started.
var svc *service

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	s, err := startService()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the real service: %v\n", err)
		return 1
	}
	defer s.stop()
	p, err := s.newSignedProject("examples")
	if err != nil {
		fmt.Fprintf(os.Stderr, "signed project: %v\n", err)
		return 1
	}
	for k, v := range map[string]string{"SEALTRAIL_URL": s.base, "SEALTRAIL_API_KEY": s.apiKey,
		"SEALTRAIL_SIGNED_API_KEY": p.apiKey, "SEALTRAIL_SIGNING_KEY_ID": p.keyID, "SEALTRAIL_SIGNING_PRIVATE_KEY": p.privateKey} {
		os.Setenv(k, v)
	}
	svc = s
	return m.Run()
}

// realService returns the running service.
func realService(t testing.TB) *service {
	t.Helper()
	if svc == nil {
		t.Fatal("the real service is not running")
	}
	return svc
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func startService() (*service, error) {
	dir, err := os.MkdirTemp("", "sealtrail-client-test-")
	if err != nil {
		return nil, err
	}
	s := &service{dir: dir, exited: make(chan struct{})}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+string(filepath.Separator), "./cmd/sealtraild", "./cmd/sealtrail")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	s.cmd = exec.Command(filepath.Join(dir, "bin", "sealtraild"), "serve", "--dev",
		"--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEALTRAIL_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Stderr = lockedWriter{&s.stderrMu, &s.stderr}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()

	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "Sealtrail is running at "); ok {
				s.base, _, _ = strings.Cut(rest, " ")
			}
			if rest, ok := strings.CutPrefix(line, "API key (all scopes, shown once): "); ok {
				s.apiKey = strings.TrimSpace(rest)
			}
			if rest, ok := strings.CutPrefix(line, "Operator token:"); ok {
				s.operatorToken = strings.TrimSpace(rest)
				found <- nil
			}
		}
		select {
		case found <- errors.New("sealtraild's output ended before the dev project was printed"):
		default: // already reported
		}
	}()
	select {
	case err = <-found:
	case <-s.exited:
		err = errors.New("sealtraild exited")
	case <-time.After(60 * time.Second):
		err = errors.New("sealtraild did not print its dev project within 60 s")
	}
	if err == nil && (s.base == "" || s.apiKey == "" || s.operatorToken == "") {
		err = fmt.Errorf("could not parse the dev output (base %q)", s.base)
	}
	if err != nil {
		s.stop()
		s.stderrMu.Lock()
		defer s.stderrMu.Unlock()
		return nil, fmt.Errorf("%w\nstderr:\n%s", err, s.stderr.String())
	}
	return s, nil
}

// stop ends the service it started, by its PID, and removes its files.
func (s *service) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	os.RemoveAll(s.dir)
}

// admin calls the operator API and decodes the JSON answer into out.
func (s *service) admin(method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, s.base+"/admin/v1"+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.operatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// signedProject is a project that requires signed events.
type signedProject struct {
	id, apiKey, keyID, privateKey, publicKey string
}

// newSignedProject creates a project and an all-scope API key through the operator API,
// then registers a fresh customer signing key (from then on the project rejects
// unsigned events).
func (s *service) newSignedProject(name string) (signedProject, error) {
	var p struct{ ID string }
	if err := s.admin(http.MethodPost, "/projects", map[string]string{"name": name}, &p); err != nil {
		return signedProject{}, err
	}
	var k struct{ Secret string }
	if err := s.admin(http.MethodPost, "/projects/"+p.ID+"/keys",
		map[string]any{"name": "sdk", "scopes": []string{"log:write", "log:read", "log:export", "log:verify"}}, &k); err != nil {
		return signedProject{}, err
	}
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		return signedProject{}, err
	}
	sp := signedProject{id: p.ID, apiKey: k.Secret, privateKey: hex.EncodeToString(priv.Seed()), publicKey: hex.EncodeToString(pub)}
	var sk struct{ ID string }
	if err := s.admin(http.MethodPost, "/projects/"+p.ID+"/signing-keys", map[string]string{"publicKey": sp.publicKey}, &sk); err != nil {
		return signedProject{}, err
	}
	sp.keyID = sk.ID
	return sp, nil
}

// sealtrail runs the offline verifier and returns its exit code and output.
func (s *service) sealtrail(t testing.TB, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(s.dir, "bin", "sealtrail"), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("sealtrail %v: %v", args, err)
	}
	return 0, string(out)
}

// exportTo writes the stream's JSON export to a file and returns its path and lines.
func exportTo(t testing.TB, c *Client, path string) [][]byte {
	t.Helper()
	resp, err := c.Export(context.Background(), ExportInput{Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}
