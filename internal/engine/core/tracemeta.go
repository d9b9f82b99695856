package core

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceMeta returns meta with the trace context of ctx added by prop, so
// that the worker can run the job in the enqueuer's trace. It adds nothing
// when ctx carries no valid span or prop is nil, and never replaces a key
// the caller set: a caller that propagates its own context wins. meta
// itself is not modified; a copy is made only when something is added.
func TraceMeta(ctx context.Context, prop propagation.TextMapPropagator, meta map[string]string) map[string]string {
	if prop == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	carrier := propagation.MapCarrier{}
	prop.Inject(ctx, carrier)
	var out map[string]string
	for k, v := range carrier {
		if _, set := meta[k]; set {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(meta)+len(carrier))
			maps.Copy(out, meta)
		}
		out[k] = v
	}
	if out == nil {
		return meta
	}
	return out
}
