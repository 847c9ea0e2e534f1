package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// The probe of `make soak` (issue 14): what an attacker does to a listening service
// with connections alone. Each attack runs against the built sealtraild with short
// timeouts, and after each the service must still answer /healthz at once.

// Short server timeouts for the probe: a header must arrive within 1 s, a whole
// request within 2 s.
const (
	probeHeaderTimeout = time.Second
	probeReadTimeout   = 2 * time.Second
	// probeCutOff bounds how long a cut-off may take: the configured timeout plus
	// generous slack for a race-instrumented binary on shared cores.
	probeCutOff = probeReadTimeout + 8*time.Second
	// healthzBound is what "answers at once" means on a loaded test machine.
	healthzBound = 5 * time.Second
)

// probeEnv configures a server with the probe's timeouts.
func probeEnv(extra ...string) []string {
	return append([]string{
		fmt.Sprintf("SEALTRAIL_READ_HEADER_TIMEOUT_MS=%d", probeHeaderTimeout.Milliseconds()),
		fmt.Sprintf("SEALTRAIL_READ_TIMEOUT_MS=%d", probeReadTimeout.Milliseconds()),
		"SEALTRAIL_WRITE_TIMEOUT_MS=10000",
		"SEALTRAIL_IDLE_TIMEOUT_MS=10000",
	}, extra...)
}

// soakScale is the probe's size: a smoke run by default, a larger bounded one with
// SEALTRAIL_SOAK=1 (scripts/soak.sh).
type soakScale struct {
	conns int           // connections per slow attack
	every time.Duration // one byte per this long
}

func probeScale() soakScale {
	if os.Getenv("SEALTRAIL_SOAK") == "1" {
		return soakScale{conns: 300, every: 1500 * time.Millisecond}
	}
	return soakScale{conns: 6, every: time.Second}
}

// hostOf is base's host:port.
func hostOf(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// slowConn is one connection that sends its request a byte at a time.
type slowConn struct {
	conn   net.Conn
	closed chan struct{} // closed when the server has closed the connection
	got    string        // what the server answered before closing
	sent   int           // trickled bytes sent
	mu     sync.Mutex
}

// startSlow opens a connection to host, writes head at once, then trickles tail one
// byte per every, until the server closes the connection or tail runs out.
func startSlow(t *testing.T, host, head, tail string, every time.Duration) *slowConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &slowConn{conn: conn, closed: make(chan struct{})}
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatalf("write head: %v", err)
	}
	go func() {
		data, _ := io.ReadAll(conn) // EOF or reset: the server closed it
		c.mu.Lock()
		c.got = string(data)
		c.mu.Unlock()
		close(c.closed)
	}()
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; i < len(tail); i++ {
			select {
			case <-c.closed:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{tail[i]}); err != nil {
				return
			}
			c.mu.Lock()
			c.sent++
			c.mu.Unlock()
		}
	}()
	return c
}

// answer is what the server wrote before closing.
func (c *slowConn) answer() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got, c.sent
}

// waitClosed requires the server to close every connection within bound and returns
// the time the last one took.
func waitClosed(t *testing.T, what string, conns []*slowConn, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for i, c := range conns {
		select {
		case <-c.closed:
		case <-deadline.C:
			_, sent := c.answer()
			t.Fatalf("%s: connection %d of %d still open after %s (%d bytes trickled); the server does not cut it off",
				what, i+1, len(conns), bound, sent)
		}
	}
	return time.Since(start)
}

// statusOf is the status code of a raw HTTP/1.1 answer (0 if none).
func statusOf(raw string) int {
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// requireHealthy requires /healthz to answer 200 within healthzBound.
func requireHealthy(t *testing.T, base, after string) {
	t.Helper()
	client := &http.Client{Timeout: healthzBound, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("after %s: /healthz: %v", after, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("after %s: /healthz answered %d", after, res.StatusCode)
	}
}

// ingestHead is the start of a POST /api/v1/log announcing a body of n bytes.
func ingestHead(host, token string, n int) string {
	h := "POST /api/v1/log HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
	if token != "" {
		h += "Authorization: Bearer " + token + "\r\n"
	}
	return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", n)
}

// slowBody trickles the bodies of n ingest requests (token "" sends none) and requires
// each cut off within probeCutOff, answered with one of want.
func slowBody(t *testing.T, s *server, token string, n int, every time.Duration, want ...int) {
	t.Helper()
	host := hostOf(t, s.base)
	body := `{"action":"slow.body","actor":{"type":"user","id":"` + strings.Repeat("s", 400) + `"}}`
	conns := make([]*slowConn, n)
	for i := range conns {
		conns[i] = startSlow(t, host, ingestHead(host, token, len(body)), body, every)
	}
	requireHealthy(t, s.base, "opening slow bodies")
	waitClosed(t, "slow body", conns, probeCutOff)
	for i, c := range conns {
		got, sent := c.answer()
		if sent >= len(body) {
			t.Fatalf("connection %d sent its whole body before being cut off", i+1)
		}
		if !slices.Contains(want, statusOf(got)) {
			t.Fatalf("slow body %d: answered %.200q, want one of %v", i+1, got, want)
		}
	}
}

// TestSoakProbe attacks the running service with slow headers and bodies, oversize
// headers and bodies and deeply nested JSON; after each it must still answer /healthz
// at once. `go test` runs a smoke version (a few connections, seconds); SEALTRAIL_SOAK=1
// a bounded larger one (hundreds of connections, at most about two minutes).
func TestSoakProbe(t *testing.T) {
	scale := probeScale()
	// Failed authentications are not what this probes: a budget large enough for the
	// keyless slow bodies keeps the address from being blocked for the attacks after.
	s := startServer(t, serveOpts{env: probeEnv("SEALTRAIL_AUTH_FAILURE_LIMIT=100000")})
	p := s.newProject("probe")
	writer := p.key[catalog.ScopeWrite]
	host := hostOf(t, s.base)

	t.Run("slow headers", func(t *testing.T) {
		conns := make([]*slowConn, scale.conns)
		for i := range conns {
			conns[i] = startSlow(t, host, "GET /healthz HTTP/1.1\r\nHost: "+host+"\r\n",
				"X-Slow: "+strings.Repeat("h", 200)+"\r\n\r\n", scale.every/4)
		}
		requireHealthy(t, s.base, "opening slow headers")
		waitClosed(t, "slow headers", conns, probeHeaderTimeout+8*time.Second)
		requireHealthy(t, s.base, "slow headers")
	})
	t.Run("slow body with a key", func(t *testing.T) {
		slowBody(t, s, writer, scale.conns, scale.every, http.StatusRequestTimeout)
		requireHealthy(t, s.base, "slow bodies with a key")
	})
	t.Run("slow body without a key", func(t *testing.T) {
		slowBody(t, s, "", scale.conns, scale.every, http.StatusUnauthorized, http.StatusTooManyRequests)
		requireHealthy(t, s.base, "slow bodies without a key")
	})
	t.Run("oversize headers", func(t *testing.T) {
		for range min(scale.conns, 20) {
			r := call(t, http.MethodGet, s.base+"/healthz", "", nil, "X-Big", strings.Repeat("b", 64<<10))
			wantError(t, "64 KiB of headers", r, http.StatusRequestHeaderFieldsTooLarge, "Request headers exceed the limit")
		}
		requireHealthy(t, s.base, "oversize headers")
	})
	t.Run("oversize body", func(t *testing.T) {
		big := `{"action":"big","actor":{"type":"user","id":"a"},"metadata":{"pad":"` + strings.Repeat("p", 2<<20) + `"}}`
		for range min(scale.conns, 20) {
			r := s.api(http.MethodPost, "/log", writer, big)
			wantError(t, "a 2 MiB body", r, http.StatusRequestEntityTooLarge, "Request body exceeds the limit")
		}
		requireHealthy(t, s.base, "oversize bodies")
	})
	t.Run("deep nesting", func(t *testing.T) {
		for _, depth := range []int{257, 10_000, 400_000} {
			deep := `{"action":"deep","actor":{"type":"user","id":"a"},"metadata":{"x":` +
				strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`
			r := s.api(http.MethodPost, "/log", writer, deep)
			if r.status != http.StatusBadRequest || !strings.Contains(r.str("error"), "nesting") {
				t.Fatalf("nesting %d deep: %d %.200s, want 400 naming the nesting", depth, r.status, r.raw)
			}
			requireHealthy(t, s.base, fmt.Sprintf("nesting %d deep", depth))
		}
	})
	t.Run("everything at once", func(t *testing.T) {
		host := hostOf(t, s.base)
		var conns []*slowConn
		for range max(1, scale.conns/3) {
			conns = append(conns,
				startSlow(t, host, "GET /healthz HTTP/1.1\r\nHost: "+host+"\r\n", strings.Repeat("h", 100), scale.every),
				startSlow(t, host, ingestHead(host, writer, 100), strings.Repeat("b", 100), scale.every),
				startSlow(t, host, ingestHead(host, "", 100), strings.Repeat("b", 100), scale.every))
		}
		for range 3 {
			requireHealthy(t, s.base, "opening every kind of slow connection")
		}
		waitClosed(t, "mixed slow connections", conns, probeCutOff)
		requireHealthy(t, s.base, "every kind of slow connection")
	})
	// The service still works.
	s.mustPost(writer, event("after.probe", "alice"))
}
