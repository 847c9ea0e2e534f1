package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLimitHeaders sends requests with headers under, just over and far over the
// limit to a real server: under passes, over is a JSON 431 that closes the connection,
// and far over is net/http's own 431.
func TestLimitHeaders(t *testing.T) {
	const limit = 16 << 10
	srv := httptest.NewUnstartedServer(LimitHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), limit))
	srv.Config.MaxHeaderBytes = HeaderReadFactor * limit
	srv.Start()
	defer srv.Close()

	send := func(pad int) (*http.Response, string) {
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: example\r\nX-Pad: %s\r\n\r\n", strings.Repeat("p", pad))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("pad %d: %v", pad, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}

	// The request line and the Host header take 44 bytes, the X-Pad line 9 more.
	if resp, body := send(limit - 100); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("headers under the limit: %d %q", resp.StatusCode, body)
	}
	resp, body := send(limit)
	var e errorBody
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || json.Unmarshal([]byte(body), &e) != nil ||
		e.Error != "Request headers exceed the limit" || !resp.Close {
		t.Fatalf("headers over the limit: %d %q (close %v)", resp.StatusCode, body, resp.Close)
	}
	if resp, _ := send(HeaderReadFactor*limit + 8<<10); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers far over the limit: %d, want net/http's 431", resp.StatusCode)
	}
	// "GET /x HTTP/1.1\r\n" (17) + "Host: example.com\r\n" (19) + "X-A: b\r\n" (8) + "\r\n" (2)
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set("X-A", "b")
	if got := headerBytes(r); got != 46 {
		t.Fatalf("headerBytes = %d, want 46", got)
	}
}
