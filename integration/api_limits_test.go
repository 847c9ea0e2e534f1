package integration

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestAPIRateLimits is the regression test of issue 14, item 9: the ingest limit is a
// token bucket (no burst of twice the limit across a clock boundary), /verify and
// /export have their own limit per project, failed authentications are limited per
// client address (X-Forwarded-For not trusted by default), and the operator's
// per-project override, set with `sealtraild admin project rate-limit`, applies.
func TestAPIRateLimits(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env("SEALTRAIL_RATE_LIMIT=5", "SEALTRAIL_READ_RATE_LIMIT=2",
			"SEALTRAIL_AUTH_FAILURE_LIMIT=3")})
		p := s.newProject("limits")
		other := s.newProject("other")

		t.Run("no double burst across a window boundary", func(t *testing.T) {
			// A clock-fixed 10 s window let 5 requests pass just before its end and 5
			// more just after; a bucket of 5 refilling at 0.5 a second lets at most
			// 5 + 0.5 per second elapsed.
			key, _ := s.newKey(p.id, []string{catalog.ScopeWrite}, "")
			boundary := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
			time.Sleep(time.Until(boundary.Add(-400 * time.Millisecond)))
			begin, passed := time.Now(), 0
			post := func(i int) {
				r := s.api(http.MethodPost, "/log", key, event(fmt.Sprint("edge", i), "alice"))
				switch r.status {
				case http.StatusAccepted:
					passed++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("ingest %d: %d %s", i, r.status, r.raw)
				}
			}
			for i := range 5 {
				post(i)
			}
			time.Sleep(time.Until(boundary.Add(50 * time.Millisecond)))
			for i := 5; i < 10; i++ {
				post(i)
			}
			elapsed := time.Since(begin)
			if bound := 5 + int(math.Ceil(elapsed.Seconds()*0.5)); passed > bound {
				t.Fatalf("%d of 10 ingests passed in %s across a window boundary; a limit of 5 per 10 s allows %d", passed, elapsed, bound)
			}
		})

		t.Run("project override", func(t *testing.T) {
			set := func(n int) {
				r := runBin(t, sealtraild, t.TempDir(), "admin", "--server", s.base, "--token", s.token, "--actor", "ops",
					"project", "rate-limit", "--project", p.id, "--ingest", strconv.Itoa(n))
				if r.code != 0 || !strings.Contains(r.stdout, p.id) {
					t.Fatalf("admin project rate-limit --ingest %d: exit %d\n%s%s", n, r.code, r.stdout, r.stderr)
				}
			}
			set(50)
			got := s.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+p.id, "ops", nil)
			if n, _ := got.body["ingestRateLimit"].(float64); n != 50 {
				t.Fatalf("project after the override: %s", got.raw)
			}
			key, _ := s.newKey(p.id, []string{catalog.ScopeWrite}, "")
			for i := range 20 {
				s.mustPost(key, event(fmt.Sprint("raised", i), "alice"))
			}
			// The other project keeps the default.
			okey, _ := s.newKey(other.id, []string{catalog.ScopeWrite}, "")
			limited := false
			for i := range 8 {
				if r := s.api(http.MethodPost, "/log", okey, event(fmt.Sprint("default", i), "bob")); r.status == http.StatusTooManyRequests {
					limited = true
					break
				}
			}
			if !limited {
				t.Fatal("the other project's key was not limited at its default of 5")
			}
			set(0)
			got = s.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+p.id, "ops", nil)
			if got.body["ingestRateLimit"] != nil {
				t.Fatalf("project after clearing the override: %s", got.raw)
			}
			r := runBin(t, sealtraild, t.TempDir(), "admin", "--server", s.base, "--token", s.token,
				"project", "rate-limit", "--project", p.id)
			if r.code != 2 {
				t.Fatalf("rate-limit without --ingest: exit %d, want 2\n%s", r.code, r.stderr)
			}
			bad := s.adminAPI(http.MethodPut, "/projects/"+p.id+"/rate-limit", "ops", map[string]any{"ingestRateLimit": -1})
			wantError(t, "a negative override", bad, http.StatusBadRequest, "")
		})

		t.Run("expensive reads per project", func(t *testing.T) {
			for _, path := range []string{"/verify", "/export?format=json"} {
				for i := range 2 {
					if r := s.api(http.MethodGet, path, p.all, nil); r.status != http.StatusOK {
						t.Fatalf("GET %s #%d: %d %.200s", path, i+1, r.status, r.raw)
					}
				}
				r := s.api(http.MethodGet, path, p.all, nil)
				wantError(t, "third "+path+" in a minute", r, http.StatusTooManyRequests, "")
				if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 || secs > 60 {
					t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
				}
				// Per project: the other project is not limited.
				if r := s.api(http.MethodGet, path, other.all, nil); r.status != http.StatusOK {
					t.Fatalf("GET %s of the other project: %d %.200s", path, r.status, r.raw)
				}
			}
			// Cheap reads are not limited.
			for range 5 {
				s.mustGet(p.all, "/root")
			}
		})

		// Last: it blocks this test's address.
		t.Run("failed authentications per address", func(t *testing.T) {
			for i := range 3 {
				r := s.api(http.MethodGet, "/root", "stk_guess"+strconv.Itoa(i), nil)
				wantError(t, "a bad key", r, http.StatusUnauthorized, "Invalid API key")
			}
			r := s.api(http.MethodGet, "/root", "stk_guess3", nil)
			wantError(t, "a fourth bad key", r, http.StatusTooManyRequests, "")
			if r.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			// X-Forwarded-For is not trusted unless configured: a made-up address does
			// not get a fresh budget.
			r = call(t, http.MethodGet, s.base+"/api/v1/root", "stk_guess4", nil, "X-Forwarded-For", "203.0.113.7")
			wantError(t, "a bad key with a made-up X-Forwarded-For", r, http.StatusTooManyRequests, "")
			// The operator API counts the same budget.
			r = call(t, http.MethodGet, s.base+"/admin/v1/projects", "sto_wrong", nil)
			wantError(t, "a wrong operator token", r, http.StatusTooManyRequests, "")
		})
	})
}

// TestPprofAuthFailuresCount: with pprof on, a wrong operator token at /debug/pprof/
// counts against the address's failed-authentication budget, which the API shares.
func TestPprofAuthFailuresCount(t *testing.T) {
	t.Parallel()
	s := startServer(t, serveOpts{env: []string{"SEALTRAIL_OPS_PPROF=true", "SEALTRAIL_AUTH_FAILURE_LIMIT=2"}})
	if r := call(t, http.MethodGet, s.base+"/debug/pprof/cmdline", s.token, nil); r.status != http.StatusOK {
		t.Fatalf("pprof with the operator token: %d %.200s", r.status, r.raw)
	}
	for i := range 2 {
		r := call(t, http.MethodGet, s.base+"/debug/pprof/", "sto_guess"+strconv.Itoa(i), nil)
		wantError(t, "pprof with a wrong operator token", r, http.StatusUnauthorized, "Invalid operator token")
	}
	r := s.api(http.MethodGet, "/root", "stk_guess", nil)
	wantError(t, "an API key after two wrong pprof tokens", r, http.StatusTooManyRequests, "")
	r = call(t, http.MethodGet, s.base+"/debug/pprof/cmdline", s.token, nil)
	wantError(t, "pprof from a blocked address", r, http.StatusTooManyRequests, "")
}
