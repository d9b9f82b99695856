package core

import "go.opentelemetry.io/otel/attribute"

// TracerName names Docket's tracer, the instrumentation scope of its spans.
const TracerName = "github.com/docketq/docket"

// The attributes of a job's run span; package handlers names them. The
// payload is never one of them: it may hold personal data.
const (
	AttrKind    = attribute.Key("docket.job.kind")
	AttrQueue   = attribute.Key("docket.job.queue")
	AttrJobID   = attribute.Key("docket.job.id")
	AttrAttempt = attribute.Key("docket.job.attempt")
	AttrOutcome = attribute.Key("docket.job.outcome")
	AttrPool    = attribute.Key("docket.pool")
	// AttrDatabase names the database a worker serves on its metrics,
	// when the process serves several (WorkerConfig.Database).
	AttrDatabase = attribute.Key("docket.database")
)
