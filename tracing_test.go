package docket_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/schedule"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// tracedJob carries a secret so that the test can check the payload never
// reaches a span.
type tracedJob struct{ Secret string }

func (tracedJob) Kind() string { return "traced" }

const secret = "s3cr3t-payload"

// TestTracing checks, end to end through NewClient and the SDK's in-memory
// exporter, that enqueue writes the caller's trace context into the job's
// meta and that every run of the job is a child span of the enqueuer's,
// with its attributes and outcome, and the handler's spans under it.
func TestTracing(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[tracedJob]) error {
		// The handler's own span nests under the run span.
		_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "handler.work")
		span.End()
		if job.Attempt == 1 {
			return handlers.RetryAfter(0, errors.New("first attempt fails"))
		}
		return nil
	}, handlers.KindOpts{})
	c, err := docket.NewClient(pool, docket.Config{
		Schema:   schema,
		Registry: reg,
		Worker:   docket.WorkerConfig{PollInterval: 50 * time.Millisecond, TracerProvider: tp},
	})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(id int64) map[string]string {
		t.Helper()
		var m map[string]string
		if err := pool.QueryRow(t.Context(), `SELECT meta FROM "`+schema+`".docket_jobs WHERE id = $1`, id).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	later := docket.Opts{Delay: time.Hour} // not run by this test's worker

	// No span in ctx: nothing is written.
	res, err := c.Enqueue(t.Context(), pool, tracedJob{Secret: secret}, later)
	if err != nil {
		t.Fatal(err)
	}
	if m := meta(res.ID); len(m) != 0 {
		t.Errorf("enqueue without a span wrote meta %v", m)
	}

	parentCtx, parent := tp.Tracer("test").Start(t.Context(), "enqueuer")
	// The caller's own trace context wins; its other keys stay.
	mine := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	callerMeta := map[string]string{"traceparent": mine, "k": "v"}
	many, err := c.EnqueueMany(parentCtx, pool, []docket.Item{{Args: tracedJob{}, Opts: docket.Opts{Delay: time.Hour, Meta: callerMeta}}})
	if err != nil {
		t.Fatal(err)
	}
	if m := meta(many[0].ID); m["traceparent"] != mine || m["k"] != "v" {
		t.Errorf("meta %v, want the caller's traceparent and key kept", m)
	}
	if len(callerMeta) != 2 {
		t.Errorf("enqueue modified the caller's meta: %v", callerMeta)
	}

	// Within a span: the job's runs are its children.
	res1, err := c.Enqueue(parentCtx, pool, tracedJob{Secret: secret}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	want := parent.SpanContext()
	if m := meta(res1.ID); !strings.Contains(m["traceparent"], want.TraceID().String()+"-"+want.SpanID().String()) {
		t.Errorf("meta %v, want the enqueuer's traceparent", m)
	}

	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	runs := func() []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == "docket.run traced" {
				out = append(out, s)
			}
		}
		return out
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(runs()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d run spans, want 2", len(runs()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := runs()
	slices.SortFunc(got, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	for i, s := range got {
		attempt, outcome := i+1, []string{"retried", "completed"}[i]
		if s.SpanKind != trace.SpanKindConsumer {
			t.Errorf("run %d: kind %v, want consumer", attempt, s.SpanKind)
		}
		if s.SpanContext.TraceID() != want.TraceID() || s.Parent.SpanID() != want.SpanID() || !s.Parent.IsRemote() {
			t.Errorf("run %d: trace %s parent %s, want a child of %s/%s", attempt,
				s.SpanContext.TraceID(), s.Parent.SpanID(), want.TraceID(), want.SpanID())
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes {
			attrs[a.Key] = a.Value
			if strings.Contains(a.Value.Emit(), secret) {
				t.Errorf("run %d: attribute %s holds the payload", attempt, a.Key)
			}
		}
		if attrs[handlers.AttrKind].AsString() != "traced" || attrs[handlers.AttrQueue].AsString() != docket.DefaultQueue ||
			attrs[handlers.AttrJobID].AsInt64() != res1.ID || attrs[handlers.AttrAttempt].AsInt64() != int64(attempt) ||
			attrs[handlers.AttrOutcome].AsString() != outcome {
			t.Errorf("run %d: attributes %v, want kind, queue, id %d, attempt %d, outcome %s", attempt, s.Attributes, res1.ID, attempt, outcome)
		}
		if failed := s.Status.Code == codes.Error; failed != (outcome == "retried") {
			t.Errorf("run %d: status %v for outcome %s", attempt, s.Status, outcome)
		}
		if outcome == "retried" && (len(s.Events) == 0 || s.Events[0].Name != "exception") {
			t.Errorf("run %d: the error is not recorded: %v", attempt, s.Events)
		}
		var children int
		for _, h := range exp.GetSpans() {
			if h.Name == "handler.work" && h.Parent.SpanID() == s.SpanContext.SpanID() {
				children++
			}
		}
		if children != 1 {
			t.Errorf("run %d: %d handler spans under it, want 1", attempt, children)
		}
	}
}

// Each run of a schedule is the root of a trace of its own: the next run
// is enqueued by the outcome hook, which writes a batch of outcomes outside
// any run span, so no run is the parent of the next and a schedule does
// not grow one endless trace.
func TestTracingScheduleRuns(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[tracedJob]) error { return nil }, handlers.KindOpts{})
	c, err := docket.NewClient(pool, docket.Config{
		Schema:    schema,
		Registry:  reg,
		Schedules: []schedule.Schedule{{Name: "tick", Spec: "@every 1s", Args: tracedJob{}}},
		Worker:    docket.WorkerConfig{PollInterval: 50 * time.Millisecond, TracerProvider: tp},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		traces := map[trace.TraceID]bool{}
		for _, s := range exp.GetSpans() {
			if s.Name != "docket.run traced" {
				continue
			}
			if s.Parent.IsValid() {
				t.Fatalf("a schedule run has parent %s", s.Parent.SpanID())
			}
			traces[s.SpanContext.TraceID()] = true
		}
		if len(traces) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d traces of schedule runs, want 2", len(traces))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
