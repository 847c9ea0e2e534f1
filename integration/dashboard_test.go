package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// dashboardClient is a browser-like client of one server's dashboard: a cookie jar
// and same-origin fetch metadata, redirects not followed.
type dashboardClient struct {
	t  *testing.T
	hc *http.Client
}

func newDashboardClient(t *testing.T) *dashboardClient {
	jar, _ := cookiejar.New(nil)
	return &dashboardClient{t: t, hc: &http.Client{Jar: jar, Timeout: httpClient.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *dashboardClient) do(method, target string, form url.Values) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var signInLink = regexp.MustCompile(`http://\S+/dashboard/signin/link\?token=[A-Za-z0-9_%-]+`)

// TestDashboardBinary: the built sealtraild serves the dashboard beside the API, make
// run's output says where, a member signs in by a link mailed through the configured
// SMTP server (mailpit) with the service's own address in it, a key made in the
// dashboard works on the API, and the session, kept in the catalog, survives a restart.
func TestDashboardBinary(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		mp := testenv.StartMailpit(t)
		dir := t.TempDir()
		s := startServer(t, serveOpts{dir: dir, dev: true, env: c.env(smtpEnv(t, mp)...)})
		// --dev prints after the server is ready.
		for deadline := time.Now().Add(startTimeout); !strings.Contains(s.stdout.String(), "sign-in link is sent from"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("--dev output does not show the dashboard:\n%s", s.stdout.String())
			}
		}
		if out := s.stdout.String(); !strings.Contains(out, "Dashboard: "+s.base+"/dashboard/") ||
			!strings.Contains(out, "one-time sign-in link is sent from sealtrail@localhost through "+mp.SMTPAddr) {
			t.Fatalf("--dev output does not show the dashboard:\n%s", out)
		}
		p := s.newProject("dashboard")
		s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+p.id+"/members", "ops",
			map[string]string{"email": "alice@example.com", "role": "owner"})

		b := newDashboardClient(t)
		if code, body := b.do(http.MethodPost, s.base+"/dashboard/signin/email", url.Values{"email": {"alice@example.com"}}); code != http.StatusOK {
			t.Fatalf("ask for a link: %d %s", code, body)
		}
		text, err := mp.LatestText(context.Background(), "alice@example.com", 0)
		if err != nil {
			t.Fatal(err)
		}
		link := signInLink.FindString(text)
		if !strings.HasPrefix(link, s.base+"/dashboard/signin/link?token=") {
			t.Fatalf("link %q in the mail does not point at %s:\n%s", link, s.base, text)
		}
		u, _ := url.Parse(link)
		if code, body := b.do(http.MethodPost, s.base+"/dashboard/signin/link", url.Values{"token": {u.Query().Get("token")}}); code != http.StatusSeeOther {
			t.Fatalf("use the link: %d %s", code, body)
		}
		code, body := b.do(http.MethodPost, s.base+"/dashboard/p/"+p.id+"/keys", url.Values{"name": {"from the dashboard"}, "scope": {"log:write"}})
		secret := regexp.MustCompile(`stk_[A-Za-z0-9_-]+`).FindString(body)
		if code != http.StatusOK || secret == "" {
			t.Fatalf("create a key: %d %s", code, body)
		}
		if r := s.logEvent(secret, "made.in.dashboard"); r.status != http.StatusAccepted {
			t.Fatalf("the dashboard's key on the API: %d %s", r.status, r.raw)
		}

		s.stop()
		s = startServer(t, serveOpts{dir: dir, env: c.env(smtpEnv(t, mp)...)})
		code, body = b.do(http.MethodGet, s.base+"/dashboard/p/"+p.id+"/api/events?action=made.in.dashboard", nil)
		if code != http.StatusOK || !strings.Contains(body, "made.in.dashboard") {
			t.Fatalf("the session after a restart: %d %s", code, body)
		}
		if code, _ := newDashboardClient(t).do(http.MethodGet, s.base+"/dashboard/p/"+p.id+"/api/events", nil); code != http.StatusUnauthorized {
			t.Fatalf("without a session: %d", code)
		}
	})
}
