package integration

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// curlRequest is the HTTP request a printed curl command line describes.
type curlRequest struct {
	method, url, body string
	headers           [][2]string
}

// parseCurl finds the curl command in text (with its backslash-newline continuations)
// and returns the request it sends. It understands what the dev banner uses: single
// quotes, -sS, -X, -H and -d.
func parseCurl(t *testing.T, text string) curlRequest {
	t.Helper()
	i := strings.Index(text, "curl ")
	if i < 0 {
		t.Fatalf("no curl line in:\n%s", text)
	}
	var line strings.Builder
	for l := range strings.Lines(text[i:]) {
		l = strings.TrimRight(l, "\n")
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line.WriteString(cont)
			continue
		}
		line.WriteString(l)
		break
	}
	words := shellWords(t, line.String())
	if len(words) == 0 || words[0] != "curl" {
		t.Fatalf("not a curl command: %q", words)
	}
	req := curlRequest{method: http.MethodGet}
	for i := 1; i < len(words); i++ {
		w := words[i]
		arg := func() string {
			if i+1 >= len(words) {
				t.Fatalf("curl %s lacks its argument", w)
			}
			i++
			return words[i]
		}
		switch {
		case w == "-sS" || w == "-s" || w == "-S":
		case w == "-X":
			req.method = arg()
		case w == "-H":
			name, value, ok := strings.Cut(arg(), ":")
			if !ok {
				t.Fatalf("curl header %q", words[i])
			}
			req.headers = append(req.headers, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
		case w == "-d" || w == "--data":
			req.body = arg()
			if req.method == http.MethodGet {
				req.method = http.MethodPost
			}
		case strings.HasPrefix(w, "http://"):
			req.url = w
		default:
			t.Fatalf("curl word %q not understood in %q", w, line.String())
		}
	}
	return req
}

// shellWords splits a POSIX shell line of plain and single-quoted words.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(`"\$`+"`", r):
			t.Fatalf("shell metacharacter %q outside single quotes in %q", r, s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// waitOutput waits until the server's stdout contains marker.
func (s *server) waitOutput(marker string) string {
	s.t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		out := s.stdout.String()
		if strings.Contains(out, marker) {
			return out
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stdout lacks %q after %s:\n%s", marker, startTimeout, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	demoProjectRe = regexp.MustCompile(`Demo project:\s+(prj_[0-9a-z]+)`)
	demoKeyRe     = regexp.MustCompile(`API key \(all scopes, shown once\):\s+(stk_[A-Za-z0-9_-]+)`)
)

// TestDevStartAndRestart is `make run` from a fresh checkout's point of view: serve
// --dev with nothing configured (default data dir under the working directory) prints
// a curl line that works as printed; after a graceful restart the project, its key and
// every event are still there, and the stored trees rebuild.
func TestDevStartAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, serveOpts{dir: dir, dev: true})
	out := s.waitOutput("restarting keeps every project")
	pm, km := demoProjectRe.FindStringSubmatch(out), demoKeyRe.FindStringSubmatch(out)
	if pm == nil || km == nil {
		t.Fatalf("dev banner lacks the project or key:\n%s", out)
	}
	projectID, apiKey := pm[1], km[1]
	if !strings.Contains(out, s.base) || !strings.Contains(out, s.token) {
		t.Errorf("dev banner lacks the address %s or the operator token", s.base)
	}

	// Execute the printed curl line.
	cr := parseCurl(t, out)
	if cr.url != s.base+"/api/v1/log" || cr.method != http.MethodPost {
		t.Fatalf("curl line sends %s %s, want POST %s/api/v1/log", cr.method, cr.url, s.base)
	}
	var hdr []string
	for _, h := range cr.headers {
		hdr = append(hdr, h[0], h[1])
	}
	r := call(t, cr.method, cr.url, "", cr.body, hdr...)
	if r.status != http.StatusAccepted || r.str("status") != "sealed" || !strings.HasPrefix(r.str("id"), "evt_") || len(r.body) != 2 {
		t.Fatalf("printed curl line: %d %s, want 202 {id: evt_..., status: sealed}", r.status, r.raw)
	}
	ids := []string{r.str("id")}
	for _, action := range []string{"doc.read", "doc.write"} {
		ids = append(ids, s.mustLog(apiKey, action))
	}
	if got := waitCheckpointSize(t, s.dataDir, s.pub, projectID, catalog.StreamEvents, 3); got != 3 {
		t.Fatalf("events checkpoint size %d, want 3", got)
	}
	s.stop()
	for _, f := range []string{"catalog.db", "service.key", "kek.key", "operator.token"} {
		fi, err := os.Stat(filepath.Join(dir, "data", f))
		if err != nil {
			t.Fatalf("data/%s: %v", f, err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("data/%s has mode %v, want no group or other access", f, fi.Mode().Perm())
		}
	}

	// Restart on the same data: same project, key, token and events; no second project.
	s2 := startServer(t, serveOpts{dir: dir, dev: true})
	out2 := s2.waitOutput("Service public key")
	if !strings.Contains(out2, "Demo project "+projectID+" exists") {
		t.Errorf("restart banner does not name the existing project %s:\n%s", projectID, out2)
	}
	if s2.token != s.token || !s2.pub.Equal(s.pub) {
		t.Error("restart changed the operator token or the service key")
	}
	projects := s2.mustAdmin(http.StatusOK, http.MethodGet, "/projects", "", nil)
	if list, _ := projects.body["projects"].([]any); len(list) != 1 {
		t.Fatalf("after restart: projects %s, want just the demo project", projects.raw)
	}
	keys := s2.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+projectID+"/keys", "", nil)
	if list, _ := keys.body["keys"].([]any); len(list) != 1 || list[0].(map[string]any)["state"] != "active" {
		t.Fatalf("after restart: keys %s, want the one active dev key", keys.raw)
	}
	if got := waitCheckpointSize(t, s2.dataDir, s2.pub, projectID, catalog.StreamEvents, 3); got != 3 {
		t.Fatalf("after restart: events checkpoint size %d, want 3", got)
	}
	ids = append(ids, s2.mustLog(apiKey, "after.restart"))
	if got := waitCheckpointSize(t, s2.dataDir, s2.pub, projectID, catalog.StreamEvents, 4); got != 4 {
		t.Fatalf("events checkpoint size %d after one more event, want 4", got)
	}
	s2.stop()

	// Behind the API: both streams rebuild from storage, and the events are the ones
	// acknowledged, in order.
	o := openOffline(t, s2.dataDir, "")
	o.rebuild(t, projectID, catalog.StreamEvents, 4)
	o.rebuild(t, projectID, catalog.StreamProjectAudit, 2) // project.created, api_key.created
	got := o.payloads(t, projectID, catalog.StreamEvents)
	want := []string{"user.login", "doc.read", "doc.write", "after.restart"}
	for i, p := range got {
		if p["action"] != want[i] {
			t.Errorf("event %d is %v, want %s", i+1, p["action"], want[i])
		}
	}
	found, err := o.cat.EventsByID(t.Context(), catalog.LogID{ProjectID: projectID, Stream: catalog.StreamEvents}, ids)
	if err != nil || len(found) != len(ids) {
		t.Fatalf("acknowledged ids found: %d of %d (%v)", len(found), len(ids), err)
	}
}

// TestMakeRunFreshTree runs `make build` and scripts/run.sh (what `make run` does) in a
// copy of the working tree without bin/ or data/, with only the listen address changed
// so that the test does not need port 8080, and checks the printed curl line works.
func TestMakeRunFreshTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries again")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ls := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	ls.Dir = root
	files, err := ls.Output()
	if err != nil {
		t.Skipf("cannot list the working tree with git: %v", err)
	}
	tree := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(tree, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("make", "build")
	build.Dir = tree
	build.Env = childEnv()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	// scripts/run.sh execs bin/sealtraild serve --dev from the tree's root.
	s := startScript(t, tree, filepath.Join(tree, "scripts", "run.sh"), "SEALTRAIL_LISTEN=127.0.0.1:0")
	out := s.waitOutput("restarting keeps every project")
	cr := parseCurl(t, out)
	var hdr []string
	for _, h := range cr.headers {
		hdr = append(hdr, h[0], h[1])
	}
	r := call(t, cr.method, cr.url, "", cr.body, hdr...)
	if r.status != http.StatusAccepted || r.str("status") != "sealed" {
		t.Fatalf("printed curl line: %d %s, want 202 sealed", r.status, r.raw)
	}
	if _, err := os.Stat(filepath.Join(tree, "data", "catalog.db")); err != nil {
		t.Errorf("make run keeps its data under ./data: %v", err)
	}
	// The banner's operator hint works from the tree's root as printed.
	res := runBin(t, filepath.Join(tree, "bin", "sealtraild"), tree, "admin", "--server", s.base, "project", "list")
	if res.code != 0 || !strings.Contains(res.stdout, "demo") {
		t.Errorf("bin/sealtraild admin project list from the tree: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	s.stop()
}

// startScript runs a script that execs sealtraild serve (so the child is the server
// itself) and waits for it like startServer.
func startScript(t *testing.T, dir, script string, env ...string) *server {
	t.Helper()
	s := &server{t: t, dataDir: filepath.Join(dir, "data"), exited: make(chan struct{})}
	s.cmd = exec.Command(script)
	s.cmd.Dir = dir
	s.cmd.Env = childEnv(env...)
	return s.launch()
}
