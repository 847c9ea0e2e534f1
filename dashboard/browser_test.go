package dashboard_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// artifactDir is where the browser tests save screenshots: $SEALTRAIL_ARTIFACTS/dashboard
// if set, else dashboard/testdata/artifacts (ignored by git).
func artifactDir(t *testing.T) string {
	dir := filepath.Join("testdata", "artifacts")
	if a := os.Getenv("SEALTRAIL_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium (its own profile, so its own cookies).
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser, on a context without a timeout (see chromedp.Run).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, dir: artifactDir(t)}
}

// run runs one action with a timeout and returns its value; failing stops the test.
func run[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		b.t.Fatalf("%s (at %s): %v\npage text:\n%s", what, loc, err, text)
	}
	return v
}

// do runs steps in order.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	run(b, what, chromedp.Steps(steps...))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return run(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// shot saves a full-page PNG (quality 100 means PNG; below it, JPEG).
func (b *browser) shot(name string) {
	b.t.Helper()
	png := run(b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// signIn signs in through the page: ask for a link, read it back from mailpit, use it.
func (b *browser) signIn(s *site, email string, shot bool) {
	b.t.Helper()
	b.do("sign-in page", chromedp.Navigate(s.url+"/dashboard/"), chromedp.WaitVisible(chromedp.ID("email")))
	if shot {
		b.shot("01-signin")
	}
	before, err := s.mail.CountTo(b.ctx, email)
	if err != nil {
		b.t.Fatal(err)
	}
	b.do("ask for a link", chromedp.SendKeys(chromedp.ID("email"), email), chromedp.Click(chromedp.ID("send-link")),
		chromedp.WaitVisible(chromedp.ID("sent")))
	text, err := s.mail.LatestText(b.ctx, email, before)
	if err != nil {
		b.t.Fatal(err)
	}
	link := linkRE.FindString(text)
	if link == "" {
		b.t.Fatalf("no link in the mail to %s:\n%s", email, text)
	}
	b.do("use the link", chromedp.Navigate(link), chromedp.Click(chromedp.ID("use-link")), chromedp.WaitVisible(chromedp.ID("projects")))
}

// TestBrowser drives the dashboard in headless Chromium as an owner, then as a member
// without rights, and saves screenshots of the main pages.
func TestBrowser(t *testing.T) {
	s := newSite(t, "sqlite")
	for i, body := range []string{
		`{"action":"doc.read","actor":{"type":"user","id":"u1"},"target":{"type":"document","id":"d1"}}`,
		`{"action":"doc.write","actor":{"type":"user","id":"u2"},"target":{"type":"document","id":"d1"}}`,
		`{"action":"doc.read","actor":{"type":"user","id":"u2"},"target":{"type":"document","id":"d2"}}`,
		`{"action":"user.login","actor":{"type":"user","id":"u1"},"status":"failed"}`,
		`{"action":"doc.read","actor":{"type":"agent","id":"a1"},"target":{"type":"document","id":"d3"},"risk":"high"}`,
	} {
		if code, resp := s.logEvent(s.apiKey, body); code != http.StatusAccepted {
			t.Fatalf("event %d: %d %s", i, code, resp)
		}
	}
	b := newBrowser(t)
	b.signIn(s, "alice@example.com", true)
	b.shot("02-projects")
	base := s.url + "/dashboard/p/" + s.projectA

	// Create a key, see its secret once, use it, revoke it, see the API refuse it.
	b.do("create a key", chromedp.Navigate(base+"/keys"), chromedp.SendKeys(chromedp.ID("key-name"), "browser"),
		chromedp.Click(chromedp.ID("create-key")), chromedp.WaitVisible(chromedp.ID("secret")))
	secret, keyID := b.text("#secret"), b.text("#new-key code")
	b.shot("03-api-key-created")
	if !strings.HasPrefix(secret, "stk_") || !strings.HasPrefix(keyID, "key_") {
		t.Fatalf("secret %q, key %q", secret, keyID)
	}
	b.do("reload keys", chromedp.Navigate(base+"/keys"), chromedp.WaitVisible(chromedp.ID("keys")))
	if run(b, "secret shown again", chromedp.Evaluate[bool](fmt.Sprintf(`document.body.innerHTML.includes(%q)`, secret))) {
		t.Fatal("the key's secret is shown again")
	}
	if code, body := s.logEvent(secret, `{"action":"key.works","actor":{"type":"user","id":"u9"}}`); code != http.StatusAccepted {
		t.Fatalf("the new key: %d %s", code, body)
	}
	b.do("revoke the key", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-key=%q] button.revoke`, keyID))),
		chromedp.WaitVisible(chromedp.ID("notice")))
	if state := b.text(fmt.Sprintf(`tr[data-key=%q] td.state`, keyID)); state != "revoked" {
		t.Fatalf("revoked key shows %q", state)
	}
	if code, body := s.logEvent(secret, `{"action":"key.works","actor":{"type":"user","id":"u9"}}`); code != http.StatusUnauthorized {
		t.Fatalf("the revoked key: %d %s, want 401", code, body)
	}

	// Browse and filter events, entity mode, and an event's proof checked in the browser.
	rows := func() []string {
		run(b, "wait for events", chromedp.Poll[chromedp.Void](`!document.getElementById("events-status").textContent.startsWith("Loading")`))
		return run(b, "event rows", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#events tbody td.action")).map(td => td.textContent)`))
	}
	b.do("events", chromedp.Navigate(base+"/events"))
	if got := rows(); len(got) != 6 {
		t.Fatalf("all events: %v", got)
	}
	b.do("filter", chromedp.SendKeys(chromedp.CSS(`#filters input[name=action]`), "doc.read"), chromedp.Click(chromedp.ID("filter")),
		chromedp.WaitVisible(chromedp.CSS(`#filters input[name=action][value="doc.read"]`)))
	if got := rows(); len(got) != 3 || got[0] != "doc.read" || got[2] != "doc.read" {
		t.Fatalf("action=doc.read: %v", got)
	}
	b.shot("04-events-filtered")
	b.do("entity mode", chromedp.Navigate(base+"/events?entityType=document&entityId=d1&direction=incoming"))
	if got := rows(); len(got) != 2 || got[0] != "doc.write" || got[1] != "doc.read" {
		t.Fatalf("entity document/d1: %v", got)
	}
	b.do("check a proof", chromedp.Click(chromedp.CSS("#events tbody tr.event td.action")), chromedp.WaitVisible(chromedp.ID("detail")),
		chromedp.Click(chromedp.ID("check-proof")), chromedp.WaitVisible(chromedp.CSS("#proof-result.ok")))
	if proof := b.text("#proof-result"); !strings.HasPrefix(proof, "Included") {
		t.Fatalf("proof result: %q", proof)
	}
	b.shot("05-event-proof")

	// Place a hold on two selected events, check a membership proof, release it.
	b.do("create a hold", chromedp.Navigate(base+"/events?action=doc.read"),
		chromedp.WaitVisible(chromedp.CSS("#events tbody tr:nth-child(2) input.select")),
		chromedp.Click(chromedp.CSS("#events tbody tr:nth-child(1) input.select")),
		chromedp.Click(chromedp.CSS("#events tbody tr:nth-child(2) input.select")),
		chromedp.SendKeys(chromedp.ID("hold-reason"), "litigation 42"), chromedp.Click(chromedp.ID("create-hold")),
		chromedp.WaitVisible(chromedp.ID("membership-root")))
	root := b.text("#membership-root")
	b.do("membership proof", chromedp.Click(chromedp.CSS("#hold-events a")), chromedp.WaitVisible(chromedp.CSS("#membership-result.ok")))
	if membership := b.text("#membership-result"); len(root) != 64 || !strings.HasPrefix(membership, "Member") {
		t.Fatalf("hold root %q, membership %q", root, membership)
	}
	b.shot("06-legal-hold")
	b.do("release the hold", chromedp.Click(chromedp.ID("release-hold")), chromedp.WaitVisible(chromedp.ID("notice")))
	if state := b.text("#hold-state"); state != "released" {
		t.Fatalf("hold state after release: %q", state)
	}

	// Heads with their signatures checked, and a full verification with its receipt.
	b.do("verify", chromedp.Navigate(base+"/verify"), chromedp.WaitVisible(chromedp.CSS(`#heads-table tr[data-stream=project-audit] td.ok`)),
		chromedp.Click(chromedp.ID("verify-events")), chromedp.WaitVisible(chromedp.CSS("#verify-result.ok")))
	if verdict := b.text("#verify-result"); !strings.HasPrefix(verdict, "Valid: 6 events") {
		t.Fatalf("verify: %q", verdict)
	}
	b.shot("07-verify")
	receipt := b.text("#receipt")
	b.do("check the receipt", chromedp.SendKeys(chromedp.ID("receipt-input"), receipt), chromedp.Click(chromedp.ID("check-receipt")),
		chromedp.WaitVisible(chromedp.CSS("#receipt-check.ok")))
	tampered := strings.Replace(receipt, `"checkedCount": 6`, `"checkedCount": 7`, 1)
	if tampered == receipt {
		t.Fatalf("receipt without checkedCount 6: %s", receipt)
	}
	b.do("check an edited receipt", chromedp.SetValue(chromedp.ID("receipt-input"), tampered), chromedp.Click(chromedp.ID("check-receipt")),
		chromedp.WaitVisible(chromedp.CSS("#receipt-check.bad")))
	if msg := b.text("#receipt-check"); !strings.Contains(msg, "altered") {
		t.Fatalf("edited receipt: %q", msg)
	}

	// Register a signing key: the page says unsigned events are now rejected, and they are.
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b.do("register a signing key", chromedp.Navigate(base+"/signing-keys"), chromedp.WaitVisible(chromedp.ID("accept-unsigned")),
		chromedp.SendKeys(chromedp.ID("public-key"), hex.EncodeToString(pub)), chromedp.Click(chromedp.ID("add-signing-key")),
		chromedp.WaitVisible(chromedp.ID("require-signed")))
	b.shot("08-signing-keys")
	if code, body := s.logEvent(s.apiKey, `{"action":"unsigned","actor":{"type":"user","id":"u1"}}`); code < 400 || code >= 500 {
		t.Fatalf("an unsigned event after registering a key: %d %s", code, body)
	}

	// Digests: the owner sets the schedule.
	b.do("digest schedule", chromedp.Navigate(base+"/digests"), chromedp.WaitVisible(chromedp.ID("set-digest-schedule")),
		chromedp.SetValue(chromedp.ID("digest-schedule-select"), "weekly"), chromedp.Click(chromedp.ID("set-digest-schedule")),
		chromedp.WaitVisible(chromedp.ID("notice")))
	if got := b.text("#digest-schedule"); got != "weekly" {
		t.Fatalf("digest schedule after setting weekly: %q", got)
	}

	// A member without rights: no management links, and the server refuses the pages
	// and a same-origin POST made from the page's own script.
	m := newBrowser(t)
	m.signIn(s, "bob@example.com", false)
	m.do("member events", chromedp.Navigate(base+"/events"), chromedp.WaitVisible(chromedp.ID("events")))
	if run(m, "nav", chromedp.Evaluate[bool](`document.querySelector("header nav a[href$='/keys']") !== null`)) {
		t.Error("a member sees the API keys link")
	}
	m.do("member on keys", chromedp.Navigate(base+"/keys"), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := m.text("#error"); !strings.Contains(msg, "does not allow") {
		t.Fatalf("member on keys: %q", msg)
	}
	m.shot("09-member-refused")
	m.do("back to events", chromedp.Navigate(base+"/events"), chromedp.WaitVisible(chromedp.ID("events")))
	status := run(m, "member POST", chromedp.Evaluate[int](`fetch(document.body.dataset.base + "/keys", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "name=x&scope=log%3Aread"}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if status != http.StatusForbidden {
		t.Fatalf("member POST /keys from the page: %d, want 403", status)
	}
	// Digests: the member opts in on the page, without a schedule form.
	m.do("member digests", chromedp.Navigate(base+"/digests"), chromedp.WaitVisible(chromedp.ID("digest-opt-in")),
		chromedp.Click(chromedp.ID("digest-opt-in")), chromedp.WaitVisible(chromedp.ID("digest-opt-out")))
	if run(m, "schedule form", chromedp.Evaluate[bool](`document.getElementById("set-digest-schedule") !== null`)) {
		t.Error("a member sees the digest schedule form")
	}
	m.shot("10-member-digests")
	if d, err := s.ctl.DigestSettings(context.Background(), s.projectA); err != nil || len(d.Recipients) != 1 ||
		d.Recipients[0] != "bob@example.com" || d.Schedule != "weekly" {
		t.Fatalf("digest settings after the browser steps: %+v, %v", d, err)
	}
	if n := countKeys(t, s, s.projectA); n != 2 {
		t.Fatalf("keys after the member's POST: %d, want 2", n)
	}
}
