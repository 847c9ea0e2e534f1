package integration

import (
	"bufio"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tlog"
)

// Helpers of the public /api/v1 acceptance tests (issue 6). They build on
// harness_test.go: startServer, call, mustAdmin, mustLog.

// allScopes are the four API key scopes, in the order the tests walk them.
var allScopes = []string{catalog.ScopeWrite, catalog.ScopeRead, catalog.ScopeExport, catalog.ScopeVerify}

// apiCatalog is one catalog a scenario runs on: the embedded default (dsn "") or a
// fresh PostgreSQL database.
type apiCatalog struct {
	name string
	dsn  string
}

// env returns the server settings that select the catalog, plus extra.
func (c apiCatalog) env(extra ...string) []string {
	if c.dsn == "" {
		return extra
	}
	return append([]string{"SEALTRAIL_CATALOG=" + c.dsn}, extra...)
}

// onEachCatalog runs fn as two parallel subtests: "embedded" (the default SQLite
// catalog) and "postgres" (a fresh database from internal/testenv, which skips locally
// without a server and fails under CI=true).
func onEachCatalog(t *testing.T, fn func(t *testing.T, c apiCatalog)) {
	t.Helper()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		fn(t, apiCatalog{name: "embedded"})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, apiCatalog{name: "postgres", dsn: testenv.PostgresDB(t)})
	})
}

// apiProject is a project with one API key per scope and one with every scope.
type apiProject struct {
	id  string
	key map[string]string // scope -> token holding only that scope
	all string            // token holding every scope
}

// newProject creates a project through the operator API, with its keys.
func (s *server) newProject(name string) *apiProject {
	s.t.Helper()
	p := &apiProject{key: map[string]string{}}
	p.id = s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects", "ops", map[string]string{"name": name}).str("id")
	for _, sc := range allScopes {
		p.key[sc], _ = s.newKey(p.id, []string{sc}, "")
	}
	p.all, _ = s.newKey(p.id, allScopes, "")
	return p
}

// newKey creates an API key of project pid; expiresAt is RFC 3339 or "".
func (s *server) newKey(pid string, scopes []string, expiresAt string) (token, keyID string) {
	s.t.Helper()
	body := map[string]any{"scopes": scopes}
	if expiresAt != "" {
		body["expiresAt"] = expiresAt
	}
	r := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/keys", "ops", body)
	key, _ := r.body["key"].(map[string]any)
	id, _ := key["id"].(string)
	if r.str("secret") == "" || id == "" {
		s.t.Fatalf("create key: %s", r.raw)
	}
	return r.str("secret"), id
}

// addSigningKey registers a fresh customer Ed25519 key for pid and returns its id and
// private key.
func (s *server) addSigningKey(pid string) (string, ed25519.PrivateKey) {
	s.t.Helper()
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		s.t.Fatal(err)
	}
	r := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/signing-keys", "ops",
		map[string]string{"publicKey": hex.EncodeToString(pub)})
	if r.str("id") == "" {
		s.t.Fatalf("register signing key: %s", r.raw)
	}
	return r.str("id"), priv
}

// signedEvent returns an ingest body signed the way the spec's clients sign: a
// client-minted id and nonce, the commitment over the RFC 8785 payload (the body minus
// the transport members), and the Ed25519 signature of it.
func signedEvent(t *testing.T, priv ed25519.PrivateKey, keyID string, payload map[string]any) map[string]any {
	t.Helper()
	id, err := tlog.NewEventID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return signedEventWithID(t, priv, keyID, id, payload)
}

// signedEventWithID is signedEvent with a given event id.
func signedEventWithID(t *testing.T, priv ed25519.PrivateKey, keyID, id string, payload map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := tlog.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := tlog.NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{}
	for k, v := range payload {
		body[k] = v
	}
	body["id"], body["nonce"], body["signingKeyId"] = id, nonce.Hex(), keyID
	body["signature"] = tlog.SignEvent(priv, id, tlog.Commitment(nonce, canon))
	return body
}

// event is a minimal valid event payload.
func event(action, actorID string) map[string]any {
	return map[string]any{"action": action, "actor": map[string]any{"type": "user", "id": actorID}}
}

// api sends a request to /api/v1 with token.
func (s *server) api(method, pathQuery, token string, body any) response {
	s.t.Helper()
	return call(s.t, method, s.base+"/api/v1"+pathQuery, token, body)
}

// mustGet requires 200 from GET /api/v1<pathQuery>.
func (s *server) mustGet(token, pathQuery string) response {
	s.t.Helper()
	r := s.api(http.MethodGet, pathQuery, token, nil)
	if r.status != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s, want 200", pathQuery, r.status, r.raw)
	}
	return r
}

// mustPost requires 202 for an ingest body and returns the event id.
func (s *server) mustPost(token string, body any) string {
	s.t.Helper()
	r := s.api(http.MethodPost, "/log", token, body)
	if r.status != http.StatusAccepted || r.str("status") != "sealed" || r.str("id") == "" {
		s.t.Fatalf("POST /log: %d %s, want 202 sealed", r.status, r.raw)
	}
	return r.str("id")
}

// wantError requires status and the exact error message (msg "" checks only that the
// body is {"error": non-empty}).
func wantError(t *testing.T, what string, r response, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.raw, status)
	}
	if e := r.str("error"); e == "" || (msg != "" && e != msg) {
		t.Fatalf("%s: body %s, want {\"error\": %q}", what, r.raw, msg)
	}
}

// sth fetches GET /root of stream and verifies the head's signature.
func (s *server) sth(token, stream string) tlog.STH {
	s.t.Helper()
	r := s.mustGet(token, "/root?stream="+stream)
	var out struct {
		STH              tlog.STH `json:"sth"`
		ServicePublicKey string   `json:"servicePublicKey"`
	}
	if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
		s.t.Fatalf("/root: %v: %s", err, r.raw)
	}
	if out.ServicePublicKey != hex.EncodeToString(s.pub) {
		s.t.Fatalf("/root: servicePublicKey %s, want %x", out.ServicePublicKey, s.pub)
	}
	if err := tlog.VerifySTH(s.pub, &out.STH); err != nil {
		s.t.Fatalf("/root: STH does not verify: %v", err)
	}
	return out.STH
}

// receipt fetches GET /verify of stream and verifies the receipt's signature.
func (s *server) receipt(token, stream string) tlog.Receipt {
	s.t.Helper()
	r := s.mustGet(token, "/verify?stream="+stream)
	var rec tlog.Receipt
	if err := json.Unmarshal([]byte(r.raw), &rec); err != nil {
		s.t.Fatalf("/verify: %v: %s", err, r.raw)
	}
	if err := tlog.VerifyReceipt(s.pub, &rec); err != nil {
		s.t.Fatalf("/verify: receipt does not verify: %v\n%s", err, r.raw)
	}
	// As docs/formats.md defines it, generically: Ed25519 over the JCS of the body
	// without "signature", so the body may carry no member the signature leaves out.
	delete(r.body, "signature")
	unsigned, err := json.Marshal(r.body)
	if err != nil {
		s.t.Fatal(err)
	}
	msg, err := tlog.Canonicalize(unsigned)
	if err != nil {
		s.t.Fatal(err)
	}
	sig, err := hex.DecodeString(rec.Signature)
	if err != nil || !ed25519.Verify(s.pub, msg, sig) {
		s.t.Fatalf("/verify: the body is not exactly the signed receipt: %s", r.raw)
	}
	if n, err := strconv.ParseUint(r.header.Get("Sealtrail-Shredded-Count"), 10, 64); err != nil || n > rec.CheckedCount {
		s.t.Fatalf("/verify: Sealtrail-Shredded-Count %q of %d checked", r.header.Get("Sealtrail-Shredded-Count"), rec.CheckedCount)
	}
	return rec
}

// download streams GET /api/v1<pathQuery> into file and returns the response and
// whether the body arrived complete (a server that aborts mid-stream
// leaves it incomplete).
func (s *server) download(token, pathQuery, file string) (*http.Response, bool) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.base+"/api/v1"+pathQuery, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", pathQuery, err)
	}
	defer res.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	_, err = io.Copy(f, res.Body)
	return res, err == nil
}

// exportLines decodes every line of an NDJSON export with tlog.DecodeExportLine.
func exportLines(t *testing.T, file string) []tlog.Record {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tlog.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 4<<20)
	for sc.Scan() {
		rec, err := tlog.DecodeExportLine(sc.Bytes())
		if err != nil {
			t.Fatalf("export line %d: %v\n%s", len(out)+1, err, sc.Text())
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// buildVerifier builds the offline verifier cmd/sealtrail into dir (the go build cache
// makes repeated builds cheap) and returns its path.
func buildVerifier(t *testing.T, dir string) string {
	t.Helper()
	return goBuild(t, dir, "sealtrail", "github.com/sealtrail/sealtrail/cmd/sealtrail")
}

// goBuild builds pkg into dir/name (without -race).
func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// verifyFull runs `sealtrail verify full` on an export.
func verifyFull(t *testing.T, bin, export string, sth tlog.STH, signingKey ed25519.PrivateKey) cliResult {
	t.Helper()
	args := []string{"verify", "full", "--export", export, "--root", sth.RootHash, "--size", fmt.Sprint(sth.TreeSize)}
	if signingKey != nil {
		args = append(args, "--signing-key", hex.EncodeToString(signingKey.Public().(ed25519.PublicKey)))
	}
	return runBin(t, bin, filepath.Dir(export), args...)
}

// hasAny reports which of needles occurs in s ("" if none).
func hasAny(s string, needles []string) string {
	for _, n := range needles {
		if n != "" && strings.Contains(s, n) {
			return n
		}
	}
	return ""
}
