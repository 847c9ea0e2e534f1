package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sealtrail/sealtrail/tlog"
)

// fakeAPI answers 202 and serves /api/v1/log as its only exact route.
type fakeAPI struct{}

func (fakeAPI) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
}

func (fakeAPI) ExactRoute(path string) bool { return path == "/api/v1/log" }

// TestAPIFirst: an exact API route skips the front muxes, any other path (one of
// theirs, an unclean one, another API path) goes through them; with tracing on every
// request goes through them, so it gets its server span.
func TestAPIFirst(t *testing.T) {
	rest := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	o := &ops{history: &tlog.KeyHistory{}}
	h := o.apiFirst(rest, fakeAPI{})
	for _, c := range []struct {
		method, target string
		want           int
	}{
		{http.MethodPost, "/api/v1/log", http.StatusAccepted},
		{http.MethodGet, "/api/v1/log", http.StatusAccepted}, // the API answers 405 itself
		{http.MethodPost, "/api/v1/log?x=1", http.StatusAccepted},
		{http.MethodPost, "/api/v1//log", http.StatusTeapot},
		{http.MethodPost, "/api/v1/log/", http.StatusTeapot},
		{http.MethodPost, "/api/v1/../v1/log", http.StatusTeapot},
		{http.MethodGet, "/api/v1/key-history", http.StatusTeapot},
		{http.MethodGet, "/debug/pprof/", http.StatusTeapot},
		{http.MethodGet, "/dashboard/", http.StatusTeapot},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(c.method, "http://127.0.0.1"+c.target, nil)
		if c.target == "/api/v1/../v1/log" {
			r.URL.Path = c.target // as a raw request line leaves it
		}
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.target, w.Code, c.want)
		}
	}
	o.tracer = newTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()), 1)
	h = o.apiFirst(rest, fakeAPI{})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/v1/log", nil))
	if w.Code != http.StatusTeapot {
		t.Errorf("with tracing on, POST /api/v1/log: %d, want %d (through the traced front)", w.Code, http.StatusTeapot)
	}
}
