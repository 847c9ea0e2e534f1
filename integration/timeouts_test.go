package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// Regression tests of issue 14, item 3: the server's read timeouts, and refusing
// unauthenticated requests before reading their bodies. Helpers in soak_probe_test.go.

// TestSlowBodiesAreCutOff: a body trickled a byte a second is cut off at the read
// timeout (408 with a key, at once 401 without), and forty such connections at once
// neither stay open nor keep /healthz from answering.
func TestSlowBodiesAreCutOff(t *testing.T) {
	t.Parallel()
	s := startServer(t, serveOpts{env: probeEnv()})
	p := s.newProject("slow")
	writer := p.key[catalog.ScopeWrite]
	slowBody(t, s, writer, 1, time.Second, http.StatusRequestTimeout)
	slowBody(t, s, "", 1, time.Second, http.StatusUnauthorized)

	host := hostOf(t, s.base)
	var conns []*slowConn
	for i := range 40 {
		token := writer
		if i%2 == 1 {
			token = "stk_not_a_key"
		}
		conns = append(conns, startSlow(t, host, ingestHead(host, token, 200), strings.Repeat("x", 200), time.Second))
	}
	for range 3 {
		requireHealthy(t, s.base, "opening 40 slow bodies")
	}
	waitClosed(t, "40 slow bodies", conns, probeCutOff)
	requireHealthy(t, s.base, "40 slow bodies")
	s.mustPost(writer, event("after.slow", "alice"))
}

// TestRefusedBodyIsNotRead: a request refused at authentication (no key, a bad key,
// no operator token) or for its scope is answered at once with its JSON error, without
// the server reading the body the client has not sent: with the default 60 s read
// timeout the answer comes while the body is still outstanding.
func TestRefusedBodyIsNotRead(t *testing.T) {
	t.Parallel()
	s := startServer(t, serveOpts{})
	p := s.newProject("refused")
	reader := p.key[catalog.ScopeRead]
	host := hostOf(t, s.base)
	for _, tc := range []struct {
		name, head string
		want       int
	}{
		{"no key", ingestHead(host, "", 1000), http.StatusUnauthorized},
		{"unknown key", ingestHead(host, "stk_unknown", 1000), http.StatusUnauthorized},
		{"missing scope", ingestHead(host, reader, 1000), http.StatusForbidden},
		{"no operator token", "POST /admin/v1/projects HTTP/1.1\r\nHost: " + host +
			"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The body never comes: one byte an hour.
			c := startSlow(t, host, tc.head, "{", time.Hour)
			waitClosed(t, tc.name, []*slowConn{c}, 10*time.Second)
			got, _ := c.answer()
			if statusOf(got) != tc.want || !strings.Contains(got, "application/json") || !strings.Contains(got, `{"error":`) {
				t.Fatalf("answered %.300q, want %d with a JSON error", got, tc.want)
			}
		})
	}
}
