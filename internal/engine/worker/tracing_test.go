package worker

import (
	"context"
	"testing"

	"github.com/docketq/docket/internal/engine/core"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTracingFollowsGlobal checks the runs of a worker that follows the
// global TracerProvider: before an application installs one, a job that
// carries a trace context still hands it to its handler, and once one is
// installed (after the worker was made) every run has a recorded span.
// The test installs a global provider: it must not run in parallel.
func TestTracingFollowsGlobal(t *testing.T) {
	tr := newTracing(nil, nil)
	if tr.unset == nil {
		t.Skip("a global TracerProvider is already installed in this test binary")
	}
	job := &core.Job{ID: 7, Kind: "k", Queue: "q", Attempt: 1}

	// No provider, no trace context: nothing to carry.
	run := &task{job: job}
	tr.start(run)
	ctx := withSpan(context.Background(), run)
	if trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("a job without a trace context ran with one")
	}
	endSpan(run)

	// No provider, a trace context from the enqueuer: the handler continues it.
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3},
		SpanID:     trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled,
	})
	meta := map[string]string{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), parent), propagation.MapCarrier(meta))
	withMeta := &core.Job{ID: 8, Kind: "k", Queue: "q", Attempt: 1, Meta: meta}
	run = &task{job: withMeta}
	tr.start(run)
	if got := trace.SpanContextFromContext(withSpan(context.Background(), run)); got.TraceID() != parent.TraceID() {
		t.Fatalf("handler's trace %s, want the enqueuer's %s", got.TraceID(), parent.TraceID())
	}
	endSpan(run)

	// An application installs a provider after the worker was made.
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	run = &task{job: job}
	tr.start(run)
	if run.span == nil || !run.span.IsRecording() {
		t.Fatal("no recorded span once a global TracerProvider was installed")
	}
	traceOutcome(run, "completed", nil)
	endSpan(run)
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != runSpanName("k") {
		t.Fatalf("spans %v, want one %q", spans, runSpanName("k"))
	}
	var outcome string
	for _, a := range spans[0].Attributes {
		if a.Key == AttrOutcome {
			outcome = a.Value.AsString()
		}
	}
	if outcome != "completed" {
		t.Fatalf("outcome attribute %q, want completed", outcome)
	}
}
