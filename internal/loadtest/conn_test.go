package loadtest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnFraming: the generator's own HTTP/1.1 connections send what net/http's
// client would (method, path with the URL's query and the request's, Host, bearer
// token, body and its length) and read every kind of answer to the end: a sized body,
// a chunked one, and one that closes the connection, after which the next request
// dials again. Every request is acknowledged, none is lost or counted twice.
func TestConnFraming(t *testing.T) {
	body := func(i int) ([]byte, int) { return Event(i, 300), 1 }
	var bad, conns atomic.Int64
	var host string // the server's address, set before it starts
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		want, _ := body(0)
		switch {
		case err != nil, r.Method != http.MethodPost, r.URL.Path != "/api/v1/log", r.URL.Query().Get("v") != "1",
			r.Host != host, r.ContentLength != int64(len(got)),
			r.Header.Get("Content-Type") != "application/json", len(got) != len(want),
			!bytes.HasPrefix(got, []byte(`{"action":"load.event"`)):
			bad.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch r.Header.Get("Authorization") {
		case "Bearer chunked": // a body larger than the server's buffer goes out chunked
			w.WriteHeader(http.StatusAccepted)
			for range 8 {
				_, _ = w.Write(bytes.Repeat([]byte("x"), 1024))
				w.(http.Flusher).Flush()
			}
		case "Bearer close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"evt_x"}`)
		case "Bearer sized":
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"evt_y"}`)
		default:
			bad.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	host = srv.Listener.Addr().String() // before Start: the handler's goroutines read it
	srv.Start()
	defer srv.Close()
	res, err := Load{URL: srv.URL + "/api/v1/log?v=1", Tokens: []string{"sized", "chunked", "close"}, C: 3, Count: 300,
		Duration: time.Minute, Body: body}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 300 || res.Events != 300 || res.Errors != 0 || bad.Load() != 0 {
		t.Fatalf("result %+v (%d bad requests), want 300 acknowledged", res, bad.Load())
	}
	// Each "close" answer ends its connection: 100 of them, and up to 3 first dials.
	if n := conns.Load(); n < 100 || n > 103 {
		t.Fatalf("%d connections, want 100-103 (one per closing answer, and the first ones)", n)
	}
}
