package docket

import (
	"log/slog"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/worker"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// PoolConfig is one worker pool: a set of queues served by a fixed number
// of handler slots. Give latency-sensitive queues their own pool so that a
// flood in another queue can never take their slots.
type PoolConfig struct {
	// Name labels the pool in logs. Empty means "pool<index>".
	Name string
	// Queues the pool claims from, tried in this order. At least one.
	Queues []string
	// Concurrency is how many jobs the pool runs at once. Zero means
	// DefaultConcurrency (100); negative is an error.
	Concurrency int
	// TenantCap, when positive, is the most jobs one tenant gets in one
	// claim batch, so a tenant's flood uses spare capacity but cannot take
	// every slot the moment others have work. Zero means no cap. Negative
	// is an error. Jobs without a tenant are one more tenant, but one the
	// claim looks for only among the queue's first jobs: give every job of
	// a capped queue a tenant. TenantCap is a share of one batch of this
	// pool, not a cap over time or across processes: for that, set a limit
	// with PerTenant and MaxRunning (docs/flow-control.md).
	TenantCap int
	// Prefetch is how many jobs beyond Concurrency the pool may hold
	// claimed, waiting for a slot, while a backlog lasts (its last claim
	// came back full): a slot that frees takes the next job at once
	// instead of waiting for a claim's round trip. A prefetched job is
	// leased, heartbeated and released at shutdown like a running one;
	// when the queue runs short the pool claims only for free slots again,
	// so other workers get the rest. Negative means none.
	//
	// Zero means automatic: Concurrency/2 (at least 1), or what the slots
	// finish in three claim round trips when that is more (two in hand
	// when a claim starts, and the one it brings), up to 4×Concurrency or
	// 1,000−Concurrency (room for two claims of 500), whichever is
	// larger. Handlers of tens of milliseconds keep it at Concurrency/2;
	// the quicker the handlers, the more it holds, so that the pool claims
	// in larger batches, which cost the database less per job, while a job
	// held ahead still waits for a slot only about two round trips.
	Prefetch int
}

// DefaultConcurrency is a pool's slots when PoolConfig.Concurrency is 0.
const DefaultConcurrency = worker.DefaultConcurrency

// WorkerConfig tunes the worker that runs the handlers of Config.Registry.
// Every zero value means the documented default.
type WorkerConfig struct {
	// Pools to run. Empty means one pool of DefaultConcurrency slots
	// serving "default" and every queue the registered kinds and the
	// Schedules name.
	Pools []PoolConfig

	// PollInterval is the backstop: each pool claims at least this often
	// even without notifications, and scheduled jobs are promoted and
	// expired leases reaped at this interval. Zero means 1s.
	PollInterval time.Duration
	// Lease is how long a claim is valid without a heartbeat. Zero means
	// 30s. A crashed worker's jobs run again after about this long.
	Lease time.Duration
	// HeartbeatInterval is how often the leases of all in-flight jobs are
	// extended (one statement). Zero means Lease/3; it must be below Lease.
	HeartbeatInterval time.Duration
	// FlushInterval is how long outcomes are buffered before they are
	// written in one batch; a flush starts early when many are pending.
	// Zero means 1ms.
	FlushInterval time.Duration
	// ShutdownTimeout is how long Stop lets in-flight handlers finish
	// before it cancels them and releases their jobs. Zero means 10s.
	ShutdownTimeout time.Duration
	// HistoryRetention is how long finished jobs are kept in history: daily
	// partitions older than this are dropped. Zero means 7 days.
	HistoryRetention time.Duration
	// ClaimCursorLag is how far behind its cursor a claim looks for jobs
	// whose enqueuing transaction committed after later jobs were claimed.
	// Zero means 1s; -1 turns cursors off, so every claim scans the claim
	// index from its start.
	ClaimCursorLag time.Duration
	// DisableNotify turns off LISTEN: pools wake only on their poll
	// interval. Use it behind poolers that do not support LISTEN
	// (PgBouncer in transaction mode), or set ListenURL instead.
	DisableNotify bool
	// ListenURL, when set, is the connection string of the worker's
	// dedicated LISTEN connection; everything else still goes through the
	// pool. Behind PgBouncer in transaction mode, point it straight at
	// PostgreSQL so that notifications keep working
	// (docs/compatibility.md). Empty means the pool's own connection
	// settings.
	ListenURL string
	// NotifyCheckTimeout is how long the worker waits for a NOTIFY it sends
	// itself each time its LISTEN connection is made (first in Start). If
	// none arrives, notifications do not reach the worker (LISTEN through
	// a transaction pooler): it logs one WARN, reports it in /readyz,
	// Client.NotifyCheck and `docket status`, and runs on by polling.
	// Start does not wait for the check. Zero means 3s; negative turns
	// the check off.
	NotifyCheckTimeout time.Duration
	// Middleware wraps every handler run; the first is the outermost.
	Middleware []handlers.Middleware
	// Logger receives the worker's logs. Nil means slog.Default().
	Logger *slog.Logger
	// TracerProvider makes the span of every job run (see Tracing in the
	// handlers package doc). Nil means otel.GetTracerProvider(), which
	// records nothing until the application installs an OpenTelemetry SDK.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the worker's OpenTelemetry instruments, the same
	// measurements as its Prometheus collectors. Nil means
	// otel.GetMeterProvider(), which records nothing until the application
	// installs an OpenTelemetry SDK.
	MeterProvider metric.MeterProvider
	// ID identifies this worker process in locked_by. Zero means a new
	// random UUID. Two live workers must never share an ID.
	ID uuid.UUID

	// Metrics, when set, receives the worker's Prometheus collectors:
	// claim duration, handler duration and outcomes by kind, in-flight
	// jobs, lease losses, NOTIFY reconnects. Workers sharing a registerer
	// share the collectors. Nil means no metrics unless MetricsAddr is set.
	Metrics prometheus.Registerer
	// MetricsAddr, when set ("host:port"), makes the worker serve /metrics,
	// /healthz and /readyz over HTTP from Start to Stop. The registry
	// served is Metrics when it is also a prometheus.Gatherer (a
	// *prometheus.Registry), else a new one with the Go and process
	// collectors. Empty means no endpoint.
	MetricsAddr string
	// MetricsStatus adds the status views (backlog, lag, DLQ, vacuum,
	// horizon) to the worker's registry. Every scrape then reads them from
	// the database: enable it on one process, or run `docket metrics
	// serve` instead.
	MetricsStatus bool
	// Database names the worker's database in its metrics, for a process
	// that serves several databases with one client each
	// (docs/scaling.md): every Prometheus series of the worker and of its
	// status views carries the label database="<Database>", and every
	// OpenTelemetry measurement the attribute docket.database
	// (handlers.AttrDatabase), so that the workers of all the databases
	// share one registry and one MeterProvider and stay apart. Empty means
	// no such label.
	Database string
}

// workerConfig is the engine's configuration of w.
func workerConfig(w WorkerConfig) worker.Config {
	pools := make([]worker.PoolConfig, len(w.Pools))
	for i, p := range w.Pools {
		pools[i] = worker.PoolConfig(p)
	}
	return worker.Config{
		Pools: pools, PollInterval: w.PollInterval, Lease: w.Lease, HeartbeatInterval: w.HeartbeatInterval,
		FlushInterval: w.FlushInterval, ShutdownTimeout: w.ShutdownTimeout, HistoryRetention: w.HistoryRetention,
		ClaimCursorLag: w.ClaimCursorLag, DisableNotify: w.DisableNotify, ListenURL: w.ListenURL,
		NotifyCheckTimeout: w.NotifyCheckTimeout, Middleware: w.Middleware, Logger: w.Logger,
		TracerProvider: w.TracerProvider, MeterProvider: w.MeterProvider, ID: w.ID,
		Metrics: w.Metrics, MetricsAddr: w.MetricsAddr, Database: w.Database,
	}
}
