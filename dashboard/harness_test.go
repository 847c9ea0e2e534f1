package dashboard_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/dashboard"
	"github.com/sealtrail/sealtrail/httpapi"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/mail"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// dashCatalog is a catalog driver with the dashboard's methods.
type dashCatalog interface {
	catalog.Catalog
	dashboard.Store
}

// site is sealtraild's HTTP side over a real catalog, sequencer and keyring: the API
// and the dashboard on one origin, with sign-in links mailed through mailpit.
type site struct {
	t        *testing.T
	url      string
	ctl      *control.Service
	api      *httpapi.Server
	cat      dashCatalog
	mail     *testenv.Mailpit
	key      ed25519.PrivateKey
	projectA string // alice@example.com owner, bob@example.com member, carol@example.com auditor
	projectB string // dave@example.com owner
	apiKey   string // every scope, project A
	clock    *clock
}

const operatorToken = "sto_dashboard_test_operator"

var operator = control.Actor{Type: "operator", ID: "test"}

// clock is the dashboard's adjustable clock.
type clock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skew += d
}

func newSite(t *testing.T, kind string) *site {
	t.Helper()
	mp := testenv.StartMailpit(t)
	ctx := context.Background()
	var (
		cat dashCatalog
		err error
	)
	switch kind {
	case "sqlite":
		cat, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	case "postgres":
		cat, err = postgres.Open(ctx, testenv.PostgresDB(t), postgres.Options{MaxConns: 8})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cat.Close)
	kekBytes := make([]byte, 32)
	_, _ = rand.Read(kekBytes)
	kek, err := keyring.NewFileKEK(kekBytes)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	store := mem.New()
	seq, err := sequencer.New(sequencer.Config{Catalog: cat, Store: store, Keyring: keyring.New(cat, kek, keyring.Options{}),
		Origin: "dashboard.test", Key: key, MaxBatch: 100, MaxAge: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctl := control.New(cat, seq, nil)
	api, err := httpapi.New(httpapi.Config{Control: ctl, Sequencer: seq, Catalog: cat, Key: key, Store: store,
		OperatorToken: operatorToken, ReadRateLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := seq.Close(ctx); err != nil {
			t.Errorf("close sequencer: %v", err)
		}
	})
	clk := &clock{}
	dash, err := dashboard.New(dashboard.Config{Control: ctl, Store: cat, API: api, OperatorToken: operatorToken,
		Mailer: startQueue(t, cat, mp), PublicURL: srv.URL, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(dashboard.Prefix, dash.Handler())
	mux.Handle("/", api.Handler())

	s := &site{t: t, url: srv.URL, ctl: ctl, cat: cat, mail: mp, key: key, clock: clk, api: api}
	a, err := ctl.CreateProject(ctx, operator, "Project A")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ctl.CreateProject(ctx, operator, "Project B")
	if err != nil {
		t.Fatal(err)
	}
	s.projectA, s.projectB = a.ID, b.ID
	for _, m := range []struct{ project, email, role string }{
		{a.ID, "alice@example.com", "owner"}, {a.ID, "bob@example.com", "member"}, {a.ID, "carol@example.com", "auditor"},
		{b.ID, "dave@example.com", "owner"},
	} {
		if _, err := ctl.AddMember(ctx, operator, m.project, m.email, m.role); err != nil {
			t.Fatal(err)
		}
	}
	s.apiKey, _, err = ctl.CreateAPIKey(ctx, operator, a.ID, "test", control.Scopes, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startQueue returns the mail queue over cat, delivered to mp by the real SMTP sender
// (STARTTLS and AUTH) until the test ends. It polls only hourly: a sign-in link that
// arrives within LatestText's 10 s shows that Send wakes the runner.
func startQueue(t *testing.T, cat mail.Store, mp *testenv.Mailpit) *mail.Queue {
	t.Helper()
	sender, err := mail.NewSMTP(mail.SMTPConfig{Addr: mp.SMTPAddr, From: "sealtrail@example.com",
		Username: testenv.MailpitUser, Password: testenv.MailpitPassword, RootCAs: mp.RootCAs})
	if err != nil {
		t.Fatal(err)
	}
	q, err := mail.NewQueue(cat, sender, mail.QueueConfig{Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return q
}

// logEvent logs an event in project A with token; it returns the status and body.
func (s *site) logEvent(token, body string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/log", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return res.StatusCode, b.String()
}

var linkRE = regexp.MustCompile(`https?://\S+/dashboard/signin/link\?token=[A-Za-z0-9_%-]+`)

// mailedLink asks for a sign-in link for email and reads it back from mailpit.
func (s *site) mailedLink(c *client, email string) string {
	s.t.Helper()
	ctx := context.Background()
	before, err := s.mail.CountTo(ctx, email)
	if err != nil {
		s.t.Fatal(err)
	}
	if code, body := c.post("/dashboard/signin/email", url.Values{"email": {email}}); code != http.StatusOK {
		s.t.Fatalf("ask for a link: %d %s", code, body)
	}
	text, err := s.mail.LatestText(ctx, email, before)
	if err != nil {
		s.t.Fatal(err)
	}
	link := linkRE.FindString(text)
	if link == "" {
		s.t.Fatalf("no sign-in link in the mail:\n%s", text)
	}
	return link
}

// client is a browser-like HTTP client: a cookie jar, same-origin fetch metadata.
type client struct {
	t    *testing.T
	site *site
	hc   *http.Client
}

func (s *site) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: s.t, site: s, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (c *client) do(req *http.Request) (int, string) {
	c.t.Helper()
	if req.Header.Get("Sec-Fetch-Site") == "" {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return res.StatusCode, b.String()
}

func (c *client) get(path string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, c.site.url+path, nil)
	return c.do(req)
}

func (c *client) post(path string, form url.Values) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, c.site.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// useLink signs c in with a mailed link (the link page's form), returning the status.
func (c *client) useLink(link string, extra url.Values) (int, string) {
	u, err := url.Parse(link)
	if err != nil {
		c.t.Fatal(err)
	}
	form := url.Values{"token": {u.Query().Get("token")}}
	for k, v := range extra {
		form[k] = v
	}
	return c.post("/dashboard/signin/link", form)
}

// signIn signs c in as email through a mailed link.
func (c *client) signIn(email string) {
	c.t.Helper()
	if code, body := c.useLink(c.site.mailedLink(c, email), nil); code != http.StatusSeeOther {
		c.t.Fatalf("sign in as %s: %d %s", email, code, body)
	}
}

// cookie returns the session cookie's value.
func (c *client) cookie() string {
	u, _ := url.Parse(c.site.url)
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "sealtrail_session" {
			return ck.Value
		}
	}
	return ""
}
