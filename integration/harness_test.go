package integration

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/storeurl"
	"github.com/sealtrail/sealtrail/tlog"
)

// sealtraild is the binary TestMain built.
var sealtraild string

// origin is the service's default checkpoint origin.
const origin = "sealtrail.localhost"

// Generous bounds: the service is a race-instrumented binary on shared cores.
const (
	startTimeout = 90 * time.Second
	stopTimeout  = 60 * time.Second
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sealtrail-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	sealtraild = filepath.Join(dir, "sealtraild")
	args := []string{"build", "-o", sealtraild}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/sealtrail/sealtrail/cmd/sealtraild")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: build sealtraild: %v\n", err)
		return 1
	}
	return m.Run()
}

// childEnv is the test's environment without SEALTRAIL_* variables (which would
// configure the child), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEALTRAIL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// server is one running `sealtraild serve`.
type server struct {
	t       *testing.T
	dataDir string
	base    string // http://127.0.0.1:port
	token   string // operator token
	pub     ed25519.PublicKey
	cmd     *exec.Cmd
	stdout  testenv.Output
	stderr  testenv.Output
	exited  chan struct{}
	waitErr error
}

type serveOpts struct {
	// dir is the working directory; default a new temp dir.
	dir string
	// dataDir is passed as --data; empty leaves the default (data under dir).
	dataDir string
	dev     bool
	env     []string // SEALTRAIL_* settings
}

// startServer starts sealtraild serve on a free loopback port and waits until /readyz
// answers 200. The server is killed at cleanup if the test did not stop it.
func startServer(t *testing.T, o serveOpts) *server {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	args := []string{"serve", "--listen", "127.0.0.1:0"}
	dataDir := filepath.Join(o.dir, "data")
	if o.dataDir != "" {
		args = append(args, "--data", o.dataDir)
		dataDir = o.dataDir
	}
	if o.dev {
		args = append(args, "--dev")
	}
	s := &server{t: t, dataDir: dataDir, exited: make(chan struct{})}
	s.cmd = exec.Command(sealtraild, args...)
	s.cmd.Dir = o.dir
	s.cmd.Env = childEnv(o.env...)
	return s.launch()
}

// launch starts s.cmd and waits until it serves and is ready.
func (s *server) launch() *server {
	t := s.t
	t.Helper()
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start sealtraild: %v", err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("sealtraild (%s) stderr:\n%s", s.base, tail(s.stderr.String(), 6000))
		}
	})

	deadline := time.Now().Add(startTimeout)
	for s.base == "" {
		s.base = s.servingAddr()
		if s.base != "" {
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("sealtraild exited before serving (%v):\n%s", s.waitErr, tail(s.stderr.String(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("sealtraild did not log its address within %s:\n%s", startTimeout, tail(s.stderr.String(), 4000))
		}
	}
	for {
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sealtraild not ready within %s (last: %v):\n%s", startTimeout, err, tail(s.stderr.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(s.dataDir, "operator.token"))
	if err != nil {
		t.Fatalf("operator token: %v", err)
	}
	s.token = strings.TrimSpace(string(tok))
	key, err := os.ReadFile(filepath.Join(s.dataDir, "service.key"))
	if err != nil {
		t.Fatalf("service key: %v", err)
	}
	priv, err := tlog.ParsePrivateKey(strings.TrimSpace(string(key)))
	if err != nil {
		t.Fatalf("service key: %v", err)
	}
	s.pub = priv.Public().(ed25519.PublicKey)
	return s
}

// servingAddr finds the "sealtraild serving" log line's address.
func (s *server) servingAddr() string {
	for line := range strings.Lines(s.stderr.String()) {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "sealtraild serving" {
			return rec.Addr
		}
	}
	return ""
}

// stop sends SIGTERM and requires a graceful exit with status 0 and no data race.
func (s *server) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		s.t.Fatalf("sealtraild did not stop within %s of SIGTERM", stopTimeout)
	}
	if s.waitErr != nil {
		s.t.Fatalf("sealtraild exited with %v after SIGTERM, want status 0", s.waitErr)
	}
	if strings.Contains(s.stderr.String(), "WARNING: DATA RACE") {
		s.t.Fatal("sealtraild reported a data race")
	}
	if !strings.Contains(s.stderr.String(), `"msg":"stopped"`) {
		s.t.Error("sealtraild did not log its graceful stop")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// response is an HTTP answer: status, raw body and the body decoded as a JSON object
// (nil if it is not one).
type response struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

func (r response) str(k string) string {
	s, _ := r.body[k].(string)
	return s
}

var httpClient = &http.Client{Timeout: 60 * time.Second}

// call sends a request; body is sent as is if it is a string, else as JSON. hdr are
// header name/value pairs.
func call(t *testing.T, method, url, bearer string, body any, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: string(data)}
	_ = json.Unmarshal(data, &r.body)
	return r
}

// adminAPI calls the operator API as actor ("" sends no actor header).
func (s *server) adminAPI(method, path, actor string, body any) response {
	s.t.Helper()
	var hdr []string
	if actor != "" {
		hdr = []string{"X-Sealtrail-Actor", actor}
	}
	return call(s.t, method, s.base+"/admin/v1"+path, s.token, body, hdr...)
}

// mustAdmin calls the operator API and requires want.
func (s *server) mustAdmin(want int, method, path, actor string, body any) response {
	s.t.Helper()
	r := s.adminAPI(method, path, actor, body)
	if r.status != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.raw, want)
	}
	return r
}

// logEvent posts an event with the API key token.
func (s *server) logEvent(token, action string) response {
	s.t.Helper()
	return call(s.t, http.MethodPost, s.base+"/api/v1/log", token,
		fmt.Sprintf(`{"action":%q,"actor":{"type":"user","id":"alice"}}`, action))
}

// mustLog posts an event and requires 202 {id, status: sealed}; it returns the id.
func (s *server) mustLog(token, action string) string {
	s.t.Helper()
	r := s.logEvent(token, action)
	if r.status != http.StatusAccepted || r.str("status") != "sealed" || !strings.HasPrefix(r.str("id"), "evt_") {
		s.t.Fatalf("POST /api/v1/log: %d %s, want 202 {id: evt_..., status: sealed}", r.status, r.raw)
	}
	return r.str("id")
}

// cliResult is what one run of the CLI did.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the test's sealtraild with args in dir.
func runCLI(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	return runBin(t, sealtraild, dir, args...)
}

// runBin runs bin with args in dir.
func runBin(t *testing.T, bin, dir string, args ...string) cliResult {
	t.Helper()
	return runBinEnv(t, bin, dir, nil, args...)
}

// runBinEnv runs bin with args in dir, with the extra environment env.
func runBinEnv(t *testing.T, bin, dir string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = childEnv(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run sealtraild %q: %v", args, err)
	}
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// admin runs `sealtraild admin` against s as actor, with --json.
func (s *server) admin(actor string, args ...string) cliResult {
	s.t.Helper()
	global := []string{"admin", "--server", s.base, "--token", s.token, "--json"}
	if actor != "" {
		global = append(global, "--actor", actor)
	}
	return runCLI(s.t, s.t.TempDir(), append(global, args...)...)
}

// mustCLI runs an admin command that must succeed and returns its JSON answer.
func (s *server) mustCLI(actor string, args ...string) map[string]any {
	s.t.Helper()
	r := s.admin(actor, args...)
	if r.code != 0 {
		s.t.Fatalf("sealtraild admin %q: exit %d: %s", args, r.code, r.stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		s.t.Fatalf("sealtraild admin %q: output is not JSON: %v\n%s", args, err, r.stdout)
	}
	return out
}

// checkpointSize reads the published, signed checkpoint of a project-stream from a
// filesystem store and returns its size (0 when the stream has none yet).
// waitCheckpointSize waits until the checkpoint object of projectID's stream names size
// want (events are acknowledged at their commit; the object follows within the
// sequencer's publish interval) and returns the size it last read, want or not after
// ten seconds.
func waitCheckpointSize(t *testing.T, dataDir string, pub ed25519.PublicKey, projectID string, stream catalog.Stream, want uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := checkpointSize(t, dataDir, pub, projectID, stream)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func checkpointSize(t *testing.T, dataDir string, pub ed25519.PublicKey, projectID string, stream catalog.Stream) uint64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dataDir, "objects", projectID, string(stream), "checkpoint"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	cp, err := tlog.OpenCheckpoint(pub, tlog.CheckpointOrigin(origin, projectID, string(stream)), data)
	if err != nil {
		t.Fatalf("checkpoint of %s/%s: %v", projectID, stream, err)
	}
	return cp.Size
}

// offlineCatalog is what the offline checks need of a catalog driver.
type offlineCatalog interface {
	sequencer.Catalog
	keyring.Store
	Close()
}

// offline is a stopped service's storage opened with the library packages.
type offline struct {
	cat offlineCatalog
	seq *sequencer.Sequencer
}

// openOffline opens the catalog (dsn "" is the data dir's SQLite file), the
// filesystem store and the key files of a stopped service.
func openOffline(t *testing.T, dataDir, dsn string) *offline {
	t.Helper()
	ctx := context.Background()
	var (
		cat offlineCatalog
		err error
	)
	if dsn == "" {
		cat, err = sqlite.Open(ctx, filepath.Join(dataDir, "catalog.db"), sqlite.Options{})
	} else {
		cat, err = postgres.Open(ctx, dsn, postgres.Options{})
	}
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	t.Cleanup(cat.Close)
	store, err := storeurl.Open(ctx, "file://"+filepath.Join(dataDir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	kek, err := keyring.LoadOrCreateKEKFile(filepath.Join(dataDir, "kek.key"))
	if err != nil {
		t.Fatal(err)
	}
	keyHex, err := os.ReadFile(filepath.Join(dataDir, "service.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := tlog.ParsePrivateKey(strings.TrimSpace(string(keyHex)))
	if err != nil {
		t.Fatal(err)
	}
	seq, err := sequencer.New(sequencer.Config{Catalog: cat, Store: store, Keyring: keyring.New(cat, kek, keyring.Options{}),
		Origin: origin, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = seq.Close(ctx)
	})
	return &offline{cat: cat, seq: seq}
}

// rebuild fully rebuilds a project-stream and requires it valid and of size want.
func (o *offline) rebuild(t *testing.T, projectID string, stream catalog.Stream, want uint64) {
	t.Helper()
	log := catalog.LogID{ProjectID: projectID, Stream: stream}
	res, err := o.seq.Rebuild(context.Background(), log, nil)
	if err != nil {
		t.Fatalf("rebuild %s: %v", log, err)
	}
	if res.Break != nil || res.Size != want || res.Live.Size != want || res.Root != res.Live.Root || res.Checked != want {
		t.Fatalf("rebuild %s: size %d (live %d, checked %d), root match %v, break %+v; want a valid tree of %d",
			log, res.Size, res.Live.Size, res.Checked, res.Root == res.Live.Root, res.Break, want)
	}
}

// payloads reads and decodes every event of a project-stream, in sequence order.
func (o *offline) payloads(t *testing.T, projectID string, stream catalog.Stream) []map[string]any {
	t.Helper()
	ctx := context.Background()
	log := catalog.LogID{ProjectID: projectID, Stream: stream}
	tree, err := o.seq.Tree(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]uint64, tree.Size)
	for i := range seqs {
		seqs[i] = uint64(i) + 1
	}
	stored, err := o.seq.Events(ctx, log, seqs)
	if err != nil {
		t.Fatalf("read %s: %v", log, err)
	}
	out := make([]map[string]any, len(stored))
	for i, s := range stored {
		if err := json.Unmarshal(s.Payload, &out[i]); err != nil {
			t.Fatalf("%s #%d: %v", log, i+1, err)
		}
	}
	return out
}
