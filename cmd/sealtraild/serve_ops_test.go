package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestOpsHandler: pprof answers only with the operator token (401 and a JSON body
// otherwise) and only when turned on; the key history is served without a key; other
// paths reach the API; with tracing on each request is a server span that continues
// the caller's traceparent.
func TestOpsHandler(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	rec := tracetest.NewSpanRecorder()
	o := &ops{history: &tlog.KeyHistory{}, pprof: true, operator: "sto_secret-token-123",
		tracer: newTracerProvider(sdktrace.WithSpanProcessor(rec), 1)}
	// The operator check is httpapi's (TestPprofAuthFailuresCount runs it in the
	// binary); this one stands in for it.
	operatorOnly := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+o.operator {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"error":"Invalid operator token"}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	h := o.handler(api, operatorOnly)
	get := func(path, token string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tok := range []string{"", "sto_wrong", "sto_secret-token-12"} {
		if w := get("/debug/pprof/", tok); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `"error"`) {
			t.Fatalf("pprof with token %q: %d %s", tok, w.Code, w.Body)
		}
	}
	if w := get("/debug/pprof/", o.operator); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "goroutine") {
		t.Fatalf("pprof with the operator token: %d", w.Code)
	}
	if w := get("/api/v1/key-history", ""); w.Code != http.StatusOK || w.Body.String() != `{"transitions":[]}` {
		t.Fatalf("key history: %d %s", w.Code, w.Body)
	}
	if w := get("/api/v1/root", ""); w.Code != http.StatusTeapot {
		t.Fatalf("API path: %d", w.Code)
	}

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec.Reset()
	o.tracer = newTracerProvider(sdktrace.WithSpanProcessor(rec), 1)
	h = o.handler(api, operatorOnly)
	get("/api/v1/root", "", "traceparent", parent)
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "GET /api/v1/root" {
		t.Fatalf("spans: %v", spans)
	}
	if got := spans[0].SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("the request span is in trace %s, not the caller's", got)
	}

	// Off: no pprof route.
	o = &ops{history: &tlog.KeyHistory{}, operator: "sto_secret-token-123"}
	h = o.handler(api, operatorOnly)
	if w := get("/debug/pprof/", o.operator); w.Code != http.StatusTeapot {
		t.Fatalf("pprof off: %d, want the API's answer", w.Code)
	}
}
