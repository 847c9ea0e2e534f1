package integration

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// fixture is a running service with one project in every state the bad-input cases
// need: a member, an active and a revoked API key, an active and a revoked signing key,
// an active and a released hold, and an event.
type fixture struct {
	*server
	pid, evt, key, revokedKey, signingKey, signingPub, revokedSigningKey, hold, releasedHold string
}

const unknownProject = "prj_0000000000000000000000000z"

// fixtureAuditEvents is the number of project_audit events newFixture's operator
// actions record.
const fixtureAuditEvents = 12

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := startServer(t, serveOpts{})
	f := &fixture{server: s}
	f.pid = s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects", "", map[string]string{"name": "acme"}).str("id")
	k := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/keys", "", map[string]any{"scopes": []string{"log:write"}})
	f.key = k.body["key"].(map[string]any)["id"].(string)
	f.evt = s.mustLog(k.str("secret"), "user.login")
	rk := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/keys", "", map[string]any{"scopes": []string{"log:read"}})
	f.revokedKey = rk.body["key"].(map[string]any)["id"].(string)
	s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+f.pid+"/keys/"+f.revokedKey+"/revoke", "", nil)
	s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/members", "", map[string]string{"email": "carol@example.com", "role": "member"})
	pub, _, _ := tlog.GenerateKey()
	f.signingPub = hex.EncodeToString(pub)
	f.signingKey = s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/signing-keys", "", map[string]string{"publicKey": f.signingPub}).str("id")
	pub2, _, _ := tlog.GenerateKey()
	f.revokedSigningKey = s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/signing-keys", "",
		map[string]string{"publicKey": hex.EncodeToString(pub2)}).str("id")
	s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+f.pid+"/signing-keys/"+f.revokedSigningKey+"/revoke", "", nil)
	s.mustAdmin(http.StatusOK, http.MethodPut, "/projects/"+f.pid+"/retention", "", map[string]any{"days": 30})
	f.hold = s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/holds", "", map[string]any{"eventIds": []string{f.evt}}).str("holdId")
	f.releasedHold = s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+f.pid+"/holds", "", map[string]any{"eventIds": []string{f.evt}}).str("holdId")
	s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+f.pid+"/holds/"+f.releasedHold+"/release", "", nil)
	// The fixture's 12 operator actions and its event are acknowledged; wait for
	// their checkpoints, which snapshot reads, to be published.
	for stream, size := range map[catalog.Stream]uint64{catalog.StreamProjectAudit: fixtureAuditEvents, catalog.StreamEvents: 1} {
		if got := waitCheckpointSize(t, s.dataDir, s.pub, f.pid, stream, size); got != size {
			t.Fatalf("fixture: %s checkpoint size %d, want %d", stream, got, size)
		}
	}
	return f
}

// snapshot is everything the operator API can change, read back through it, plus the
// size of the project's signed project_audit checkpoint.
func (f *fixture) snapshot() string {
	f.t.Helper()
	var b strings.Builder
	b.WriteString(f.mustAdmin(http.StatusOK, http.MethodGet, "/projects", "", nil).raw)
	for _, sub := range []string{"keys", "members", "signing-keys", "retention", "holds"} {
		b.WriteString(f.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+f.pid+"/"+sub, "", nil).raw)
	}
	fmt.Fprintf(&b, "project_audit=%d events=%d\n", checkpointSize(f.t, f.dataDir, f.pub, f.pid, catalog.StreamProjectAudit),
		checkpointSize(f.t, f.dataDir, f.pub, f.pid, catalog.StreamEvents))
	if _, err := os.Stat(filepath.Join(f.dataDir, "objects", unknownProject)); err == nil {
		b.WriteString("the unknown project has a stream\n")
	}
	return b.String()
}

// TestAdminAPIBadInput sends bad input to every operator route: each gets a 4xx JSON
// error naming the problem, and nothing changes, the project_audit stream included.
func TestAdminAPIBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	before := f.snapshot()
	if !strings.Contains(before, fmt.Sprintf("project_audit=%d ", fixtureAuditEvents)) {
		t.Fatalf("fixture: unexpected project_audit size:\n%s", before)
	}
	p := "/projects/" + f.pid
	u := "/projects/" + unknownProject
	longActor := strings.Repeat("a", 300)
	validKey := `{"scopes":["log:read"]}`
	cases := []struct {
		name, method, path string
		body               any // string: sent as is
		token, actor       string
		want               int
	}{
		{"no operator token", "POST", "/projects", `{"name":"x"}`, "-", "", 401},
		{"wrong operator token", "POST", "/projects", `{"name":"x"}`, "sto_wrong_wrong_wrong", "", 401},
		{"API key as operator token", "GET", "/projects", nil, "stk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", 401},
		{"project malformed JSON", "POST", "/projects", `{"name":`, "", "", 400},
		{"project empty body", "POST", "/projects", "", "", "", 400},
		{"project unknown member", "POST", "/projects", `{"name":"x","owner":"y"}`, "", "", 400},
		{"project missing name", "POST", "/projects", `{}`, "", "", 400},
		{"project blank name", "POST", "/projects", `{"name":"   "}`, "", "", 400},
		{"project name wrong type", "POST", "/projects", `{"name":7}`, "", "", 400},
		{"project duplicate JSON key", "POST", "/projects", `{"name":"a","name":"b"}`, "", "", 400},
		{"project trailing data", "POST", "/projects", `{"name":"a"} {}`, "", "", 400},
		{"project array body", "POST", "/projects", `["x"]`, "", "", 400},
		{"project body too large", "POST", "/projects", `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, "", "", 413},
		{"project actor too long", "POST", "/projects", `{"name":"x"}`, "", longActor, 400},
		{"project list bad limit", "GET", "/projects?limit=0", nil, "", "", 400},
		{"get unknown project", "GET", u, nil, "", "", 404},
		{"key unknown project", "POST", u + "/keys", validKey, "", "", 404},
		{"key list unknown project", "GET", u + "/keys", nil, "", "", 404},
		{"key bad scope", "POST", p + "/keys", `{"scopes":["log:delete"]}`, "", "", 400},
		{"key no scopes", "POST", p + "/keys", `{"scopes":[]}`, "", "", 400},
		{"key missing scopes", "POST", p + "/keys", `{"name":"n"}`, "", "", 400},
		{"key scopes as string", "POST", p + "/keys", `{"scopes":"log:read"}`, "", "", 400},
		{"key bad expiry", "POST", p + "/keys", `{"scopes":["log:read"],"expiresAt":"tomorrow"}`, "", "", 400},
		{"key past expiry", "POST", p + "/keys", `{"scopes":["log:read"],"expiresAt":"2020-01-01T00:00:00Z"}`, "", "", 400},
		{"key malformed JSON", "POST", p + "/keys", `{"scopes":["log:read"]`, "", "", 400},
		{"revoke unknown key", "POST", p + "/keys/key_nope/revoke", nil, "", "", 404},
		{"revoke revoked key", "POST", p + "/keys/" + f.revokedKey + "/revoke", nil, "", "", 409},
		{"revoke key in unknown project", "POST", u + "/keys/" + f.key + "/revoke", nil, "", "", 404},
		{"member malformed email", "POST", p + "/members", `{"email":"carol","role":"member"}`, "", "", 400},
		{"member bad role", "POST", p + "/members", `{"email":"dan@example.com","role":"god"}`, "", "", 400},
		{"member missing role", "POST", p + "/members", `{"email":"dan@example.com"}`, "", "", 400},
		{"member duplicate", "POST", p + "/members", `{"email":"carol@example.com","role":"admin"}`, "", "", 409},
		{"member unknown project", "POST", u + "/members", `{"email":"dan@example.com","role":"member"}`, "", "", 404},
		{"member unknown field", "POST", p + "/members", `{"email":"dan@example.com","role":"member","x":1}`, "", "", 400},
		{"remove unknown member", "DELETE", p + "/members/dan@example.com", nil, "", "", 404},
		{"member list unknown project", "GET", u + "/members", nil, "", "", 404},
		{"signing key malformed", "POST", p + "/signing-keys", `{"publicKey":"abc123"}`, "", "", 400},
		{"signing key uppercase", "POST", p + "/signing-keys", `{"publicKey":"` + strings.ToUpper(f.signingPub) + `"}`, "", "", 400},
		{"signing key missing", "POST", p + "/signing-keys", `{}`, "", "", 400},
		{"signing key duplicate", "POST", p + "/signing-keys", `{"publicKey":"` + f.signingPub + `"}`, "", "", 409},
		{"signing key unknown project", "POST", u + "/signing-keys", `{"publicKey":"` + f.signingPub + `"}`, "", "", 404},
		{"revoke unknown signing key", "POST", p + "/signing-keys/sk_nope/revoke", nil, "", "", 404},
		{"revoke revoked signing key", "POST", p + "/signing-keys/" + f.revokedSigningKey + "/revoke", nil, "", "", 409},
		{"retention negative days", "PUT", p + "/retention", `{"days":-1}`, "", "", 400},
		{"retention zero days", "PUT", p + "/retention", `{"days":0}`, "", "", 400},
		{"retention too many days", "PUT", p + "/retention", `{"days":36501}`, "", "", 400},
		{"retention missing days", "PUT", p + "/retention", `{"stream":"events"}`, "", "", 400},
		{"retention fractional days", "PUT", p + "/retention", `{"days":1.5}`, "", "", 400},
		{"retention bad stream", "PUT", p + "/retention", `{"days":1,"stream":"project_audit"}`, "", "", 400},
		{"retention unknown project", "PUT", u + "/retention", `{"days":1}`, "", "", 404},
		{"hold unknown event", "POST", p + "/holds", `{"eventIds":["evt_nope"]}`, "", "", 404},
		{"hold known and unknown event", "POST", p + "/holds", `{"eventIds":["` + f.evt + `","evt_nope"]}`, "", "", 404},
		{"hold no events", "POST", p + "/holds", `{"eventIds":[]}`, "", "", 400},
		{"hold missing events", "POST", p + "/holds", `{"reason":"r"}`, "", "", 400},
		{"hold unknown project", "POST", u + "/holds", `{"eventIds":["` + f.evt + `"]}`, "", "", 404},
		{"release unknown hold", "POST", p + "/holds/hold_nope/release", nil, "", "", 404},
		{"release released hold", "POST", p + "/holds/" + f.releasedHold + "/release", nil, "", "", 409},
		{"release hold in unknown project", "POST", u + "/holds/" + f.hold + "/release", nil, "", "", 404},
		{"unknown route", "POST", p + "/frobnicate", `{}`, "", "", 404},
		{"wrong method", "PATCH", p + "/retention", `{"days":1}`, "", "", 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			token := f.token
			switch c.token {
			case "":
			case "-":
				token = ""
			default:
				token = c.token
			}
			var hdr []string
			if c.actor != "" {
				hdr = []string{"X-Sealtrail-Actor", c.actor}
			}
			r := call(t, c.method, f.base+"/admin/v1"+c.path, token, c.body, hdr...)
			if r.status != c.want {
				t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.status, r.raw, c.want)
			}
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || r.str("error") == "" {
				t.Errorf("%s %s: body %q is not a JSON error", c.method, c.path, r.raw)
			}
			if strings.Contains(r.raw, "Internal") {
				t.Errorf("%s %s: internal error for bad input: %s", c.method, c.path, r.raw)
			}
			if after := f.snapshot(); after != before {
				t.Fatalf("state changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}
}

// TestAdminCLIBadInput runs the admin CLI with bad input: usage errors exit 2 and API
// errors exit 1, each with one line on stderr and nothing on stdout, and nothing
// changes.
func TestAdminCLIBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	before := f.snapshot()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	cases := []struct {
		name string
		args []string
		want int    // exit status
		msg  string // part of the message
	}{
		{"no command", nil, 2, "command is required"},
		{"no subcommand", []string{"key"}, 2, "subcommand is required"},
		{"unknown command", []string{"key", "destroy", "--project", f.pid}, 2, "unknown command"},
		{"unknown noun", []string{"frobnicate", "now"}, 2, "unknown command"},
		{"unknown flag", []string{"key", "create", "--project", f.pid, "--scopes", "log:read", "--colour", "red"}, 2, "colour"},
		{"unknown global flag", []string{"--bogus", "project", "list"}, 2, "bogus"},
		{"missing flag", []string{"key", "create", "--project", f.pid}, 2, "--scopes"},
		{"missing flags", []string{"member", "add", "--project", f.pid}, 2, "--email, --role"},
		{"bad --expires", []string{"key", "create", "--project", f.pid, "--scopes", "log:read", "--expires", "tomorrow"}, 2, "--expires"},
		{"negative days", []string{"retention", "set", "--project", f.pid, "--days", "-5"}, 2, "--days"},
		{"missing days", []string{"retention", "set", "--project", f.pid}, 2, "--days"},
		{"non-numeric days", []string{"retention", "set", "--project", f.pid, "--days", "ten"}, 2, "days"},
		{"hold without event", []string{"hold", "create", "--project", f.pid}, 2, "--event"},
		{"stray argument", []string{"project", "list", "extra"}, 2, "extra"},
		{"unknown project", []string{"key", "list", "--project", unknownProject}, 1, "HTTP 404"},
		{"key in unknown project", []string{"key", "create", "--project", unknownProject, "--scopes", "log:read"}, 1, "HTTP 404"},
		{"bad scope", []string{"key", "create", "--project", f.pid, "--scopes", "log:read,log:delete"}, 1, "log:delete"},
		{"revoke revoked key", []string{"key", "revoke", "--project", f.pid, "--key", f.revokedKey}, 1, "HTTP 409"},
		{"revoke unknown key", []string{"key", "revoke", "--project", f.pid, "--key", "key_nope"}, 1, "HTTP 404"},
		{"expired --expires", []string{"key", "create", "--project", f.pid, "--scopes", "log:read", "--expires", "2020-01-01T00:00:00Z"}, 1, "HTTP 400"},
		{"malformed public key", []string{"signing-key", "add", "--project", f.pid, "--public-key", "xyz"}, 1, "HTTP 400"},
		{"duplicate signing key", []string{"signing-key", "add", "--project", f.pid, "--public-key", f.signingPub}, 1, "HTTP 409"},
		{"revoke revoked signing key", []string{"signing-key", "revoke", "--project", f.pid, "--key", f.revokedSigningKey}, 1, "HTTP 409"},
		{"duplicate member", []string{"member", "add", "--project", f.pid, "--email", "carol@example.com", "--role", "admin"}, 1, "HTTP 409"},
		{"bad role", []string{"member", "add", "--project", f.pid, "--email", "dan@example.com", "--role", "god"}, 1, "HTTP 400"},
		{"unknown member", []string{"member", "remove", "--project", f.pid, "--email", "dan@example.com"}, 1, "HTTP 404"},
		{"too many days", []string{"retention", "set", "--project", f.pid, "--days", "99999"}, 1, "HTTP 400"},
		{"bad stream", []string{"retention", "set", "--project", f.pid, "--days", "3", "--stream", "audit"}, 1, "HTTP 400"},
		{"hold on unknown event", []string{"hold", "create", "--project", f.pid, "--event", "evt_nope"}, 1, "HTTP 404"},
		{"release released hold", []string{"hold", "release", "--project", f.pid, "--hold", f.releasedHold}, 1, "HTTP 409"},
		{"release unknown hold", []string{"hold", "release", "--project", f.pid, "--hold", "hold_nope"}, 1, "HTTP 404"},
		{"wrong token", []string{"--token", "sto_wrong_wrong_wrong", "key", "create", "--project", f.pid, "--scopes", "log:read", "--expires", future}, 1, "HTTP 401"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.admin("mallory", c.args...)
			line := strings.TrimSuffix(r.stderr, "\n")
			if r.code != c.want || strings.Contains(line, "\n") || !strings.HasPrefix(line, "sealtraild: ") ||
				!strings.Contains(line, c.msg) || r.stdout != "" {
				t.Errorf("admin %q: exit %d, stdout %q, stderr %q; want exit %d and one line naming %q",
					c.args, r.code, r.stdout, r.stderr, c.want, c.msg)
			}
			if after := f.snapshot(); after != before {
				t.Fatalf("state changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}

	// The service's own command line: usage errors exit 2.
	for _, args := range [][]string{{}, {"frobnicate"}, {"serve", "--bogus"}, {"serve", "extra"}} {
		if r := runCLI(t, t.TempDir(), args...); r.code != 2 || r.stdout != "" || r.stderr == "" {
			t.Errorf("sealtraild %q: exit %d, stdout %q, stderr %q; want exit 2 and a message", args, r.code, r.stdout, r.stderr)
		}
	}
	// Help is not an error.
	for _, args := range [][]string{{"admin", "--help"}, {"admin", "help"}, {"help"}} {
		if r := runCLI(t, t.TempDir(), args...); r.code != 0 || !strings.Contains(r.stdout, "usage: sealtraild") {
			t.Errorf("sealtraild %q: exit %d, stdout %q; want exit 0 and the usage", args, r.code, r.stdout)
		}
	}
	// An unreachable server is an error (exit 1), not a usage error.
	if r := runCLI(t, t.TempDir(), "admin", "--server", "http://127.0.0.1:1", "--token", f.token, "project", "list"); r.code != 1 ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("unreachable server: exit %d, stderr %q; want exit 1 and one line", r.code, r.stderr)
	}
}
