package integration

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestDigestsTwoReplicas runs two replicas on one PostgreSQL catalog with SMTP set to
// mailpit (STARTTLS and AUTH required) and digests checked every 200 ms. Opting a
// member in through the admin CLI makes the daily digest go out: once, to that
// member only, though both replicas look for it; the email verifies offline with
// sealtrail verify digest, and fails (exit 1) once its text is edited.
func TestDigestsTwoReplicas(t *testing.T) {
	t.Parallel()
	pit := testenv.StartMailpit(t)
	dsn := testenv.PostgresDB(t)
	dataDir := t.TempDir()
	if err := os.Chmod(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(smtpEnv(t, pit), "SEALTRAIL_CATALOG="+dsn, "SEALTRAIL_SMTP_FROM=digests@sealtrail.test",
		"SEALTRAIL_DIGEST_INTERVAL_MS=200", "SEALTRAIL_MAIL_POLL_MS=100")
	a := startServer(t, serveOpts{dataDir: dataDir, env: env})
	b := startServer(t, serveOpts{dataDir: dataDir, env: env})

	p := a.newProject("digested")
	a.mustLog(p.all, "user.login")
	for _, m := range []string{"ann@example.com", "bob@example.com"} {
		a.mustCLI("ops", "member", "add", "--project", p.id, "--email", m, "--role", "member")
	}
	if r := b.admin("ops", "digest", "schedule", "--project", p.id, "--schedule", "hourly"); r.code != 2 {
		t.Fatalf("a bad schedule: exit %d %s", r.code, r.stderr)
	}
	if r := b.admin("ops", "digest", "opt-in", "--project", p.id, "--email", "nobody@example.com"); r.code == 0 {
		t.Fatalf("opt-in of a non-member succeeded: %s", r.stdout)
	}
	show := b.mustCLI("ann", "digest", "opt-in", "--project", p.id, "--email", "ann@example.com")
	if show["schedule"] != "daily" || !slices.Equal(show["recipients"].([]any), []any{"ann@example.com"}) {
		t.Fatalf("digest opt-in answered %v", show)
	}

	var msgs []testenv.MailpitMessage
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if msgs = pit.Messages(t); len(msgs) > 0 {
			break
		}
	}
	// Give a second digest, were there one, time to arrive.
	time.Sleep(time.Second)
	msgs = pit.Messages(t)
	if len(msgs) != 1 || msgs[0].To[0].Address != "ann@example.com" {
		t.Fatalf("mailpit holds %+v, want one digest to ann@example.com", msgs)
	}
	if r := a.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+p.id+"/digests", "", nil); r.str("lastPeriod") != "daily "+time.Now().UTC().Format("2006-01-02") {
		t.Fatalf("digest settings after the digest: %s", r.raw)
	}

	dir := t.TempDir()
	verifier := buildVerifier(t, dir)
	eml := pit.Raw(t, msgs[0].ID)
	key := hex.EncodeToString(a.pub)
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if r := runBin(t, verifier, dir, "verify", "digest", "--file", write("digest.eml", eml), "--service-key", key); r.code != 0 {
		t.Fatalf("verify digest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	edited := bytes.Replace(eml, []byte("events:        1 added"), []byte("events:        9 added"), 1)
	if bytes.Equal(edited, eml) {
		t.Fatalf("the events count is not in the email:\n%s", eml)
	}
	r := runBin(t, verifier, dir, "verify", "digest", "--file", write("edited.eml", edited), "--service-key", key)
	if r.code != 1 || !strings.Contains(r.stderr, "digest_text_edited") {
		t.Fatalf("verify an edited digest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// smtpEnv is the environment that points sealtraild at pit: its address, its AUTH
// credentials (the password in a 0600 file) and its certificate for STARTTLS.
func smtpEnv(t *testing.T, pit *testenv.Mailpit) []string {
	t.Helper()
	pwFile := filepath.Join(t.TempDir(), "smtp.password")
	if err := os.WriteFile(pwFile, []byte(testenv.MailpitPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"SEALTRAIL_SMTP_ADDR=" + pit.SMTPAddr, "SEALTRAIL_SMTP_USERNAME=" + testenv.MailpitUser,
		"SEALTRAIL_SMTP_PASSWORD_FILE=" + pwFile, "SEALTRAIL_SMTP_CA_FILE=" + pit.CertFile}
}
