package docket_test

import (
	"context"
	"testing"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// spanCtx returns a context carrying a sampled remote span with a trace
// state, as a caller's instrumented code would have.
func spanCtx(t *testing.T) context.Context {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=v1")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
		SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	return trace.ContextWithSpanContext(context.Background(), sc)
}

const wantParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// Every enqueue path writes the trace context of its ctx into the job's
// meta, beside the caller's own keys.
func TestEnqueueWritesTraceContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := stdlib.OpenDBFromPool(b.Pool)
	defer db.Close()
	ctx := spanCtx(t)
	opts := docket.Opts{Meta: map[string]string{"k": "v"}}
	items := []docket.Item{{Args: noop{N: 1}, Opts: opts}}
	var ids []int64
	add := func(res []docket.Enqueued, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("path %d: %v", len(ids), err)
		}
		ids = append(ids, res[0].ID)
	}
	one := func(r docket.Enqueued, err error) ([]docket.Enqueued, error) { return []docket.Enqueued{r}, err }
	add(one(b.client.Enqueue(ctx, b.Pool, noop{}, opts)))
	add(one(b.client.EnqueueSQL(ctx, db, noop{}, opts)))
	add(b.client.EnqueueMany(ctx, b.Pool, items))
	add(b.client.EnqueueManySQL(ctx, db, items))
	// Paths: Enqueue, EnqueueSQL, EnqueueMany, EnqueueManySQL.
	for i, id := range ids {
		var meta map[string]string
		if err := b.Pool.QueryRow(b.Ctx, `SELECT meta FROM `+b.Table("docket_jobs")+` WHERE id = $1`, id).Scan(&meta); err != nil {
			t.Fatal(err)
		}
		if meta["traceparent"] != wantParent || meta["tracestate"] != "vendor=v1" || meta["k"] != "v" || len(meta) != 3 {
			t.Errorf("path %d: meta %v, want traceparent, tracestate and the caller's key", i, meta)
		}
	}
	if len(opts.Meta) != 1 {
		t.Errorf("enqueue modified the caller's meta: %v", opts.Meta)
	}
}

// A propagator that writes nothing turns trace context off; a context
// without a span writes nothing either.
func TestEnqueueTraceContextOff(t *testing.T) {
	t.Parallel()
	b := setup(t, docket.Config{Propagator: propagation.NewCompositeTextMapPropagator()})
	plain := setup(t)
	for _, tc := range []struct {
		name   string
		client *docket.Client
		ctx    context.Context
	}{
		{"no-op propagator", b.client, spanCtx(t)},
		{"no span", plain.client, context.Background()},
	} {
		res, err := tc.client.Enqueue(tc.ctx, b.Pool, noop{}, docket.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		schema := b.Schema
		if tc.client == plain.client {
			schema = plain.Schema
		}
		var n int
		if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM "`+schema+`".docket_jobs WHERE id = $1 AND meta IS NULL`, res.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s: meta written", tc.name)
		}
	}
}
