package sequencer

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTraceSubmitThroughCommit: with a tracer provider installed, a submission is a
// child span of its caller's, carries its sequence, and the group commit that sealed it
// is a span linked to it. (Not parallel: it sets the global tracer provider.)
func TestTraceSubmitThroughCommit(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	h := newHarness(t, nil)
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	res, err := h.seq.Submit(ctx, testLog, entry(1))
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	var submit, commit sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "sequencer.submit":
			submit = s
		case "sequencer.commit":
			if commit == nil {
				commit = s
			}
		}
	}
	if submit == nil || commit == nil {
		t.Fatalf("spans ended: %d, no submit (%v) or commit (%v) span", len(rec.Ended()), submit != nil, commit != nil)
	}
	if submit.Parent().SpanID() != parent.SpanContext().SpanID() || submit.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatal("the submit span is not a child of the caller's span")
	}
	if !hasAttr(submit.Attributes(), "sealtrail.sequence", int64(res.Sequence)) {
		t.Fatalf("submit span attributes %v lack sequence %d", submit.Attributes(), res.Sequence)
	}
	linked := false
	for _, l := range commit.Links() {
		linked = linked || l.SpanContext.SpanID() == submit.SpanContext().SpanID()
	}
	if !linked {
		t.Fatalf("the commit span's %d links do not name the submit span", len(commit.Links()))
	}
}

func hasAttr(attrs []attribute.KeyValue, key string, v int64) bool {
	for _, a := range attrs {
		if string(a.Key) == key && a.Value.AsInt64() == v {
			return true
		}
	}
	return false
}
