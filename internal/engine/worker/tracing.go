package worker

import (
	"context"
	"reflect"

	"github.com/docketq/docket/internal/engine/core"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names Docket's tracer, the instrumentation scope of its spans.
const tracerName = "github.com/docketq/docket"

// The attributes of a run span. The payload is never one of them: it may
// hold personal data.
const (
	AttrKind    = attribute.Key("docket.job.kind")    // the job's kind
	AttrQueue   = attribute.Key("docket.job.queue")   // the job's queue
	AttrJobID   = attribute.Key("docket.job.id")      // the job's id
	AttrAttempt = attribute.Key("docket.job.attempt") // this run's attempt, from 1
	// AttrOutcome is what the run led to: completed, retried, snoozed,
	// cancelled, dead, released (handed back at shutdown) or lost (the
	// lease was lost; the job runs again elsewhere).
	AttrOutcome = attribute.Key("docket.job.outcome")
)

// tracing starts the span of each job run (see Tracing in the package doc).
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// unset is the global TracerProvider's placeholder when the worker
	// uses the global provider and no application had installed one
	// when the worker was made; nil otherwise. While otel still returns
	// it, a span without a parent would be an empty one that nobody
	// sees (see start).
	unset trace.TracerProvider
}

// globalPlaceholder is the package of the TracerProvider that otel
// returns until an application installs one.
const globalPlaceholder = "go.opentelemetry.io/otel/internal/global"

// newTracing returns the tracing of a worker: nil tp means the global
// TracerProvider (a no-op until the application installs an SDK), nil
// prop means W3C Trace Context, matching enqueue's default (docket.Config.Propagator).
func newTracing(tp trace.TracerProvider, prop propagation.TextMapPropagator) tracing {
	var unset trace.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
		if t := reflect.TypeOf(tp); t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPlaceholder {
			unset = tp
		}
	}
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	return tracing{tracer: tp.Tracer(tracerName), prop: prop, unset: unset}
}

// runSpanOptions are the start options of every run span.
var runSpanOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// runSpanName names the run spans of kind.
func runSpanName(kind string) string { return "docket.run " + kind }

// start begins the run span of t, a child of the trace context its
// enqueuer left in the job's meta, and keeps it in t.span. A job without
// meta carries no trace context, and its span needs nothing extracted.
//
// While the worker follows the global TracerProvider and no application
// has installed one yet, a job without meta gets no span (t.span stays
// nil): the placeholder's span would be a no-op without a trace context,
// which the handler could not tell from none, and making it took about
// 4% of the worker's CPU in a drain of no-op jobs. Once an SDK is installed,
// otel.GetTracerProvider no longer returns the placeholder and every run
// has its span again. (Instrumentation that attaches to the process from
// outside and makes the placeholder's spans real, without installing a
// provider, sees no spans of such runs.)
func (tr tracing) start(t *task) {
	j := t.job
	parent := context.Background()
	if len(j.Meta) > 0 {
		parent = tr.prop.Extract(parent, propagation.MapCarrier(j.Meta))
	} else if tr.unset != nil && otel.GetTracerProvider() == tr.unset {
		return
	}
	name := ""
	if t.kind != nil {
		name = t.kind.spanName
	} else {
		name = runSpanName(j.Kind)
	}
	_, t.span = tr.tracer.Start(parent, name, runSpanOptions...)
	// Without an SDK the span records nothing: spare the hot path the
	// attributes.
	if t.span.IsRecording() {
		t.span.SetAttributes(
			AttrKind.String(j.Kind), AttrQueue.String(j.Queue),
			AttrJobID.Int64(j.ID), AttrAttempt.Int(j.Attempt),
		)
	}
}

// withSpan returns ctx carrying t's run span, so that the handler's own
// spans nest under it.
func withSpan(ctx context.Context, t *task) context.Context {
	if t.span == nil {
		return ctx // runOnce: no worker, no span
	}
	if !t.span.IsRecording() && !t.span.SpanContext().IsValid() {
		return ctx // what the handler would find there anyway: no span
	}
	return trace.ContextWithSpan(ctx, t.span)
}

// traceOutcome records what a run led to on its span; err is the
// handler's error, recorded when the run failed.
func traceOutcome(t *task, what string, err error) {
	if t.span == nil || !t.span.IsRecording() {
		return
	}
	t.span.SetAttributes(AttrOutcome.String(what))
	switch what {
	case "retried", "dead", "cancelled":
		if err != nil {
			t.span.RecordError(err)
			t.span.SetStatus(codes.Error, err.Error())
		} else {
			t.span.SetStatus(codes.Error, what)
		}
	}
}

// tracedOutcome is the outcome attribute of o: outcomeName's, with a job
// its handler cancelled told apart from one that died of failures.
func tracedOutcome(o outcome) string {
	if o.what == oDead && o.reason == core.ReasonCancelled {
		return "cancelled"
	}
	return outcomeName(o)
}

// endSpan ends t's run span, if it has one.
func endSpan(t *task) {
	if t.span != nil {
		t.span.End()
	}
}
