package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// conn is one worker's keep-alive HTTP/1.1 connection. A worker has one request in
// flight at a time, so it writes each request itself (its head and body in one
// writev) and reads the answer with http.ReadResponse on a reader of its own: no
// transport goroutines, no channel hand-offs, no per-request header map to build.
// net/http's Transport had cost the generator about 55 µs of CPU per request on the
// two cores it shares with the server under test (docs/performance.md, "round19"),
// more than the trivial handler's whole server side.
type conn struct {
	target *url.URL
	nc     net.Conn
	r      *bufio.Reader
	head   []byte
	stop   func() bool // unregisters the context's deadline hook
}

// newConn returns a conn for requests to target; it dials on the first request.
func newConn(target *url.URL) *conn {
	return &conn{target: target}
}

// pastDeadline makes a blocked read or write return at once.
var pastDeadline = time.Unix(1, 0)

// dial connects, and arranges for ctx's end to interrupt the connection.
func (c *conn) dial(ctx context.Context) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.target.Host)
	if err != nil {
		return err
	}
	c.nc = nc
	if c.r == nil {
		c.r = bufio.NewReaderSize(nc, 16<<10)
	} else {
		c.r.Reset(nc)
	}
	c.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(pastDeadline) })
	return nil
}

// close drops the connection; the next request dials again.
func (c *conn) close() {
	if c.nc == nil {
		return
	}
	c.stop()
	_ = c.nc.Close()
	c.nc = nil
}

// do sends one request (a GET of query, or a POST of body when query is "") with
// token as its bearer token, reads the whole answer and returns its status. Any
// failure closes the connection.
func (c *conn) do(ctx context.Context, method, query string, body []byte, token string) (int, error) {
	if c.nc == nil {
		if err := c.dial(ctx); err != nil {
			return 0, err
		}
	}
	status, keep, err := c.roundTrip(method, query, body, token)
	if err != nil || !keep {
		c.close()
	}
	return status, err
}

func (c *conn) roundTrip(method, query string, body []byte, token string) (status int, keep bool, err error) {
	h := append(c.head[:0], method...)
	h = append(h, ' ')
	if p := c.target.EscapedPath(); p != "" {
		h = append(h, p...)
	} else {
		h = append(h, '/')
	}
	if c.target.RawQuery != "" {
		h = append(h, '?')
		h = append(h, c.target.RawQuery...)
	}
	h = append(h, query...)
	h = append(h, " HTTP/1.1\r\nHost: "...)
	h = append(h, c.target.Host...)
	if token != "" {
		h = append(h, "\r\nAuthorization: Bearer "...)
		h = append(h, token...)
	}
	if method == http.MethodPost {
		h = append(h, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		h = strconv.AppendInt(h, int64(len(body)), 10)
	}
	h = append(h, "\r\n\r\n"...)
	c.head = h
	bufs := net.Buffers{h}
	if len(body) > 0 {
		bufs = append(bufs, body)
	}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		return 0, false, fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, false, fmt.Errorf("read response: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, false, fmt.Errorf("read response body: %w", err)
	}
	return resp.StatusCode, !resp.Close, nil
}
