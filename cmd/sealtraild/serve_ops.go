package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/sealtrail/sealtrail/servicekey"
	"github.com/sealtrail/sealtrail/tlog"
)

// ops is the operations wiring of serve: the service key history, tracing and
// profiling (docs/key-rotation.md, docs/observability.md).
type ops struct {
	history  *tlog.KeyHistory
	tracer   *sdktrace.TracerProvider // nil: tracing off
	pprof    bool
	operator string
}

// startOps loads the key history (which must end at the service key) and, when
// configured, starts tracing. Stop it with close.
func startOps(ctx context.Context, cfg Config, key ed25519.PrivateKey, operatorToken string, logger *slog.Logger) (*ops, error) {
	h, err := servicekey.Load(cfg.Ops.KeyHistoryFile, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, usageError{err}
	}
	o := &ops{history: h, pprof: cfg.Ops.Pprof, operator: operatorToken}
	if cfg.Ops.OTLPEndpoint != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Ops.OTLPEndpoint))
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		o.tracer = newTracerProvider(sdktrace.WithBatcher(exp), cfg.Ops.TraceSampleRatio)
		otel.SetTracerProvider(o.tracer)
		logger.Info("tracing on", "otlp_endpoint", cfg.Ops.OTLPEndpoint, "sample_ratio", cfg.Ops.TraceSampleRatio)
	}
	return o, nil
}

// newTracerProvider is the service's tracer provider: spans through export,
// sampled at ratio unless the caller's traceparent decided.
func newTracerProvider(export sdktrace.TracerProviderOption, ratio float64) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(semconv.ServiceName("sealtraild"))
	return sdktrace.NewTracerProvider(export, sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
}

// handler wraps the API's handler with the routes of operations: the public key
// history, pprof behind the operator token, and the HTTP server span of each request
// when tracing is on.
// operatorOnly is the API's operator-token check (httpapi.Server.OperatorOnly), so
// that failures there count against the same per-address budget.
func (o *ops) handler(api http.Handler, operatorOnly func(http.Handler) http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/api/v1/key-history", servicekey.Handler(o.history))
	if o.pprof && o.operator != "" {
		mux.Handle("/debug/pprof/", operatorOnly(http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", operatorOnly(http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", operatorOnly(http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", operatorOnly(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", operatorOnly(http.HandlerFunc(pprof.Trace)))
	}
	mux.Handle("/", api)
	if o.tracer == nil {
		return mux
	}
	return otelhttp.NewHandler(mux, "sealtraild", otelhttp.WithTracerProvider(o.tracer),
		otelhttp.WithPropagators(propagation.TraceContext{}), // a caller's traceparent
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

// close flushes and stops tracing.
func (o *ops) close() {
	if o.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.tracer.Shutdown(ctx)
}
