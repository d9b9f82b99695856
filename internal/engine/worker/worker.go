package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/metricserver"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// PoolConfig is one worker pool; docket.PoolConfig documents its fields.
type PoolConfig struct {
	Name        string
	Queues      []string
	Concurrency int
	TenantCap   int
	Prefetch    int
}

// Config configures a Worker: DB, Schema and Handlers are its place and
// its work; the tuning fields are docket.WorkerConfig's, documented
// there, with the same zero values.
type Config struct {
	// DB is the pool the worker claims, heartbeats and writes outcomes
	// through. Transactional jobs hold one of its connections for their
	// whole run; at most MaxConns-3 do so at once, so that heartbeats and
	// outcome writes always find a connection. The heartbeat keeps one
	// from Start to Stop when MaxConns is at least 4 (see keptConn).
	DB *pgxpool.Pool
	// Schema holds Docket's tables; empty means "public".
	Schema string
	// DisableHistory deletes completed jobs instead of keeping them in
	// docket_jobs_done (docket.Config.DisableHistory).
	DisableHistory bool
	// NotifyDebounce is the enqueuers' NOTIFY debounce window: a pool
	// claims once more two windows after a notification (-1: no NOTIFY).
	NotifyDebounce time.Duration
	// LatestMigration is the migration version the worker's /readyz wants
	// the schema at (migrate.Migrator.Latest).
	LatestMigration int
	// Collectors are more Prometheus collectors for the worker's registry,
	// such as the status views' (docket.WorkerConfig.MetricsStatus).
	Collectors []prometheus.Collector
	// Handlers are the handlers to run (a *handlers.Registry). New takes
	// a snapshot of its kinds: kinds registered later are not run by this
	// worker, which claims only the kinds it has.
	Handlers Handlers
	// Hooks are the outcome hooks of kinds of Handlers, by kind (see
	// OutcomeHook).
	Hooks map[string]OutcomeHook
	// Propagator reads back the trace context that enqueue wrote into a
	// job's meta. Nil means W3C Trace Context, enqueue's default too.
	Propagator propagation.TextMapPropagator
	// OnClaim, when set, is called after every successful claim statement
	// with its round-trip time and the number of jobs it took (the
	// benchmarks' claim statistics), also after a completion of serial
	// jobs that claimed the next jobs of their keys (its round trip, and
	// the jobs it handed on). It runs on the claim path: keep it quick.
	OnClaim func(took time.Duration, jobs int)

	Pools              []PoolConfig
	PollInterval       time.Duration
	Lease              time.Duration
	HeartbeatInterval  time.Duration
	FlushInterval      time.Duration
	ShutdownTimeout    time.Duration
	HistoryRetention   time.Duration
	ClaimCursorLag     time.Duration
	DisableNotify      bool
	ListenURL          string
	NotifyCheckTimeout time.Duration
	Middleware         []core.Middleware
	Logger             *slog.Logger
	TracerProvider     trace.TracerProvider
	MeterProvider      metric.MeterProvider
	ID                 uuid.UUID
	Metrics            prometheus.Registerer
	MetricsAddr        string
	Database           string
}

// Defaults of Config's and PoolConfig's zero values.
const (
	// DefaultConcurrency is a pool's slots when PoolConfig.Concurrency is 0.
	DefaultConcurrency = 100
	// DefaultPollInterval is Config.PollInterval's default.
	DefaultPollInterval = time.Second
	// DefaultLease is Config.Lease's default.
	DefaultLease = 30 * time.Second
	// DefaultFlushInterval is Config.FlushInterval's default.
	DefaultFlushInterval = time.Millisecond
	// DefaultShutdownTimeout is Config.ShutdownTimeout's default.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultHistoryRetention is Config.HistoryRetention's default.
	DefaultHistoryRetention = 7 * 24 * time.Hour
)

// ErrInvalidConfig wraps every validation failure of New.
var ErrInvalidConfig = errors.New("docket: invalid worker config")

// ErrStarted is returned by Start on a worker that was started before.
var ErrStarted = errors.New("docket: worker already started")

// Handlers is what the worker needs of the handlers it runs;
// *handlers.Registry implements it.
type Handlers interface {
	// Kinds returns the kinds that have a handler.
	Kinds() []string
	// KindOpts returns the options a kind was registered with, Backoff
	// set.
	KindOpts(kind string) (core.KindOpts, bool)
	// Transactional reports whether kind's handler runs in a transaction
	// that also writes its job's completion.
	Transactional(kind string) bool
	// Handle decodes job's payload and calls its kind's handler, with tx
	// for a transactional kind; a panic becomes a *core.PanicError.
	Handle(ctx context.Context, tx pgx.Tx, job *core.Job) error
}

// kindRun is a registered kind bound to this worker's middleware.
type kindRun struct {
	name     string
	opts     core.KindOpts
	tx       bool
	hook     OutcomeHook // nil: none
	work     core.Work
	spanName string      // of its runs' spans, built once
	met      *kindMeters // nil: records nothing (RunOne)
}

// Worker claims jobs and runs their handlers in one process. Create it with
// New, then Start and Stop it. Its methods are safe for concurrent use.
type Worker struct {
	db      *pgxpool.Pool
	schema  string
	history bool              // keep completed jobs in docket_jobs_done
	parts   partition.History // the history table's daily partitions
	latest  int               // the migration /readyz wants
	// notifyDebounce is the enqueuers' NOTIFY window; -1: no NOTIFY.
	notifyDebounce time.Duration
	q              *queue.Queue // the worker protocol on the schema's tables
	id             uuid.UUID
	log            *slog.Logger
	kinds          map[string]*kindRun
	names          []string // kinds, for the claim

	pools   []*pool
	byQueue map[string][]*pool

	poll, lease, hbInterval, shutdown time.Duration

	inflight  *inflight
	executing *executing
	// progressKick wakes the heartbeat when a handler reported progress
	// (task.ReportProgress).
	progressKick chan struct{}
	fin          *finisher // writes every outcome
	connSem      chan struct{}

	// services run beside the pools from Start to Stop (see service); the
	// ones the rest of the worker talks to are named too.
	services []service
	promoter *promoter // told of due times by the finisher
	pauses   *pauses   // read by the claims
	limits   *limits   // read by the claims
	places   *places   // the places of per-tenant concurrency limits held here
	presence *presence // deregistered at the end of Stop
	// notifyCheck checks that notifications reach the listener; nil
	// when notifications or the check are off.
	notifyCheck *notifyCheck
	partitions  *partitions // prepared in Start

	claimLat claimWindow
	onClaim  func(time.Duration, int) // Config.OnClaim; nil when unset
	tracing  tracing

	met        recorder
	gatherer   prometheus.Gatherer
	metricsAdr string
	metricsSrv *metricserver.Server

	mu       sync.Mutex
	started  bool
	stopDone chan struct{} // non-nil once Stop began; closed when it ends

	stopping   atomic.Bool
	stopClaims chan struct{}   // closed when Stop begins
	handlerCtx context.Context // parent of handlers' contexts: Start's values, never cancelled
	claimWG    sync.WaitGroup  // claim loops
	slotWG     sync.WaitGroup  // handler slots
}

// New validates cfg and returns a worker that is not started yet. It
// returns an error wrapping ErrInvalidConfig for a missing DB or
// Handlers, no kinds, a negative duration, a heartbeat interval
// not below the lease, or an invalid pool.
func New(cfg Config) (*Worker, error) {
	bad := func(format string, args ...any) (*Worker, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if cfg.DB == nil || cfg.Handlers == nil {
		return bad("DB and Handlers are required")
	}
	for name, d := range map[string]time.Duration{
		"PollInterval": cfg.PollInterval, "Lease": cfg.Lease, "HeartbeatInterval": cfg.HeartbeatInterval,
		"FlushInterval": cfg.FlushInterval, "ShutdownTimeout": cfg.ShutdownTimeout,
		"HistoryRetention": cfg.HistoryRetention,
	} {
		if d < 0 {
			return bad("negative %s", name)
		}
	}
	q, err := queue.New(cfg.Schema, queue.Config{DisableHistory: cfg.DisableHistory, CursorLag: cfg.ClaimCursorLag})
	if err != nil {
		return nil, err
	}
	w := &Worker{
		db:           cfg.DB,
		schema:       q.Schema(),
		history:      !cfg.DisableHistory,
		parts:        partition.Of(q.Schema()),
		latest:       cfg.LatestMigration,
		q:            q,
		id:           cfg.ID,
		log:          cfg.Logger,
		poll:         orDefault(cfg.PollInterval, DefaultPollInterval),
		lease:        orDefault(cfg.Lease, DefaultLease),
		onClaim:      cfg.OnClaim,
		shutdown:     orDefault(cfg.ShutdownTimeout, DefaultShutdownTimeout),
		inflight:     newInflight(),
		progressKick: make(chan struct{}, 1),
		executing:    newExecuting(),
		byQueue:      map[string][]*pool{},
		stopClaims:   make(chan struct{}),
		tracing:      newTracing(cfg.TracerProvider, cfg.Propagator),
	}
	w.hbInterval = orDefault(cfg.HeartbeatInterval, w.lease/3)
	if w.hbInterval >= w.lease {
		return bad("HeartbeatInterval %s must be below Lease %s", w.hbInterval, w.lease)
	}
	if w.id == uuid.Nil {
		w.id = uuid.New()
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	w.log = w.log.With(slog.String("worker", w.id.String()))
	for i, m := range cfg.Middleware {
		if m == nil {
			return bad("Middleware[%d] is nil", i)
		}
	}
	w.kinds = map[string]*kindRun{}
	for _, name := range cfg.Handlers.Kinds() {
		opts, ok := cfg.Handlers.KindOpts(name)
		if !ok {
			continue // unregistered meanwhile
		}
		w.kinds[name] = newKindRun(cfg, name, opts)
		w.names = append(w.names, name)
	}
	for kind := range cfg.Hooks {
		if w.kinds[kind] == nil {
			return bad("outcome hook of kind %s, which has no handler", kind)
		}
	}
	if len(w.names) == 0 {
		return bad("no handlers")
	}
	slices.Sort(w.names)

	pools := cfg.Pools
	if len(pools) == 0 {
		pools = []PoolConfig{{Queues: []string{core.DefaultQueue}}}
	}
	for i, pc := range pools {
		if pc.Name == "" {
			pc.Name = fmt.Sprintf("pool%d", i)
		}
		if len(pc.Queues) == 0 {
			return bad("pool %s has no queues", pc.Name)
		}
		for _, q := range pc.Queues {
			if err := core.CheckName("queue", q, false); err != nil {
				return bad("pool %s: %v", pc.Name, err)
			}
		}
		if pc.Concurrency < 0 || pc.TenantCap < 0 {
			return bad("pool %s: negative Concurrency or TenantCap", pc.Name)
		}
		if pc.Concurrency == 0 {
			pc.Concurrency = DefaultConcurrency
		}
		pc.Queues = slices.Clone(pc.Queues)
		p := newPool(w, pc)
		w.pools = append(w.pools, p)
		for _, q := range pc.Queues {
			if !slices.Contains(w.byQueue[q], p) {
				w.byQueue[q] = append(w.byQueue[q], p)
			}
		}
	}
	w.connSem = make(chan struct{}, max(1, int(cfg.DB.Config().MaxConns)-3))
	w.fin = newFinisher(w, orDefault(cfg.FlushInterval, DefaultFlushInterval))
	if err := w.setupMetrics(cfg); err != nil {
		return bad("metrics: %v", err)
	}
	for name, kr := range w.kinds {
		kr.met = w.met.forKind(name)
	}
	w.notifyDebounce = orDefault(cfg.NotifyDebounce, 2*time.Millisecond)
	up := upkeep{db: w.db, q: w.q, log: w.log, poll: w.poll, lease: w.lease, wakeAll: w.wakeAll, wakeQueues: w.wakeQueues}
	w.promoter = newPromoter(up, w.schema, w.notifyDebounce)
	w.pauses = newPauses(up)
	w.limits = newLimits(up)
	w.places = newPlaces()
	w.presence = newPresence(w)
	w.partitions = &partitions{db: w.db, log: w.log, history: w.history, parts: w.parts,
		retention: orDefault(cfg.HistoryRetention, DefaultHistoryRetention)}
	if !cfg.DisableNotify && w.notifyDebounce >= 0 {
		if cfg.NotifyCheckTimeout >= 0 {
			// Before the listener, whose LISTEN triggers the first check.
			w.notifyCheck = newNotifyCheck(w, orDefault(cfg.NotifyCheckTimeout, DefaultNotifyCheckTimeout))
			w.services = append(w.services, w.notifyCheck)
		}
		l, err := newListener(w, cfg.ListenURL)
		if err != nil {
			return bad("ListenURL: %v", err)
		}
		w.services = append(w.services, l)
	}
	// The paused queues and this process's row are read and written before
	// the pools' first claim, since the services start before the pools.
	w.services = append(w.services, &heartbeat{w: w}, &leaseWatch{w: w}, w.presence, w.pauses,
		w.limits, &reaper{up: up}, w.promoter, w.partitions)
	return w, nil
}

// newKindRun binds a kind's handler to cfg's middleware. A transactional
// handler finds its transaction in the context (core.TxRun), where the run
// puts it, since middleware passes only ctx and the job along.
func newKindRun(cfg Config, name string, opts core.KindOpts) *kindRun {
	kr := &kindRun{name: name, opts: opts, tx: cfg.Handlers.Transactional(name), hook: cfg.Hooks[name], spanName: runSpanName(name)}
	if opts.Backoff == nil {
		kr.opts.Backoff = core.Backoff
	}
	h := cfg.Handlers
	kr.work = core.Chain(cfg.Middleware, func(ctx context.Context, job *core.Job) error {
		var tx pgx.Tx
		if r := core.TxRunFrom(ctx); r != nil {
			tx, _ = r.Tx.(pgx.Tx)
		}
		return h.Handle(ctx, tx, job)
	})
	return kr
}

// setupMetrics makes the worker's OpenTelemetry instruments and registers
// its Prometheus collectors as cfg asks.
func (w *Worker) setupMetrics(cfg Config) error {
	ot, err := newMeters(cfg.MeterProvider, w, cfg.Database)
	if err != nil {
		return fmt.Errorf("OpenTelemetry instruments: %w", err)
	}
	w.met.otel = ot
	reg := cfg.Metrics
	if reg == nil && cfg.MetricsAddr == "" {
		if len(cfg.Collectors) > 0 {
			return errors.New("the status views need Metrics or MetricsAddr")
		}
		return nil
	}
	if reg == nil {
		reg = metricserver.NewRegistry()
	}
	m, err := metricsFor(reg, cfg.Database)
	if err != nil {
		return err
	}
	w.met.prom = m
	for _, c := range cfg.Collectors {
		if err := labelled(reg, cfg.Database).Register(c); err != nil {
			return err
		}
	}
	if cfg.MetricsAddr != "" {
		g, ok := reg.(prometheus.Gatherer)
		if !ok {
			return errors.New("MetricsAddr needs Metrics to be a prometheus.Gatherer, or nil")
		}
		w.gatherer, w.metricsAdr = g, cfg.MetricsAddr
	}
	return nil
}

// MetricsAddr returns the address the worker's metrics endpoint listens on
// (useful with MetricsAddr ":0"), or "" when it serves none.
func (w *Worker) MetricsAddr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.metricsSrv == nil {
		return ""
	}
	return w.metricsSrv.Addr()
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// ID returns the worker's id, the value of locked_by on the jobs it runs.
func (w *Worker) ID() uuid.UUID { return w.id }

// Start checks that Docket's tables exist, then starts claiming and running
// jobs in the background and returns. Handlers' contexts carry ctx's
// values. When ctx ends, the worker stops as if Stop had been called; call
// Stop to wait for that. Start fails with ErrStarted when called twice, and
// with the database's error (ErrNotMigrated for missing tables) when the
// check fails; a failed Start may be retried.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.stopDone != nil {
		return ErrStarted
	}
	if _, _, err := w.q.NextScheduled(ctx, w.db); err != nil {
		return fmt.Errorf("docket: start worker: %w", err)
	}
	// History partitions exist before the first completion, so that none
	// has to wait for one to be created (and no transactional handler's
	// completion fails for the lack of one).
	if err := w.partitions.prepare(ctx); err != nil {
		return fmt.Errorf("docket: start worker: create history partitions: %w", err)
	}
	if w.metricsAdr != "" {
		ready, err := metricserver.SchemaReadiness(w.db, w.schema, w.latest)
		if err != nil {
			return fmt.Errorf("docket: start worker: metrics endpoint: %w", err)
		}
		srv, err := metricserver.Serve(w.metricsAdr, w.gatherer, ready, w.readyNotes)
		if err != nil {
			return fmt.Errorf("docket: start worker: metrics endpoint: %w", err)
		}
		w.metricsSrv = srv
	}
	w.started = true
	w.handlerCtx = context.WithoutCancel(ctx)
	if w.met.prom != nil {
		w.met.prom.attach(w)
	}
	w.fin.start()
	for _, s := range w.services {
		s.start(ctx)
	}
	for _, p := range w.pools {
		p.start()
	}
	w.log.Info("worker started", slog.Int("pools", len(w.pools)), slog.Any("kinds", w.names))
	go func() {
		select {
		case <-ctx.Done():
			_ = w.Stop(context.Background())
		case <-w.stopClaims:
		}
	}()
	return nil
}

// Stop shuts the worker down gracefully: it stops claiming, releases
// claimed jobs that have not started, and waits for running handlers until
// ShutdownTimeout (or ctx's deadline, if earlier) nearly runs out. Then it
// cancels the handlers still running (context cause core.ErrShutdown), releases
// their jobs to ready at once without counting the attempt, writes every
// pending outcome and returns. A handler that ignores its context is left
// running, and its outcome is dropped. Stop is idempotent: later calls wait
// for the first to finish. It returns nil, or ctx's error if ctx ended while
// a later call was waiting.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if w.stopDone != nil {
		done := w.stopDone
		w.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.stopDone = make(chan struct{})
	started := w.started
	w.mu.Unlock()
	defer close(w.stopDone)
	if !started {
		close(w.stopClaims)
		return nil
	}

	begin := time.Now()
	deadline := begin.Add(w.shutdown)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// Keep a slice of the budget for cancelling, releasing and writing.
	grace := max(0, min(time.Second, time.Until(deadline)/4))

	w.stopping.Store(true)
	close(w.stopClaims)
	waitUntil(&w.claimWG, deadline.Add(-grace))
	if !waitUntil(&w.slotWG, deadline.Add(-grace)) {
		n := 0
		for _, t := range w.inflight.snapshot(nil) {
			if t.state.Load() == stRunning {
				t.cancel(core.ErrShutdown)
				n++
			}
		}
		w.log.Warn("shutdown deadline reached; cancelling running handlers", slog.Int("jobs", n))
		if !waitUntil(&w.slotWG, deadline.Add(-grace/2)) {
			for _, t := range w.inflight.snapshot(nil) {
				if t.state.CompareAndSwap(stRunning, stReleased) {
					w.log.Warn("handler ignores cancellation; releasing its job and dropping its outcome", core.JobAttrs(t.job)...)
					w.fin.add(outcome{task: t, what: oRelease})
				}
			}
		}
	}
	// Write what is pending. Give the writes at least a second even when
	// the deadline is spent: a job left running waits out its lease.
	fctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), later(deadline, time.Now().Add(time.Second)))
	defer cancel()
	w.fin.close(fctx)
	// The heartbeat kept the leases of the outcomes written above: the
	// services stop only now.
	for _, s := range slices.Backward(w.services) {
		s.stop()
	}
	for _, p := range w.pools {
		p.rewake.Stop()
		p.limitTimes.timer.Stop()
	}
	w.presence.deregister(fctx)
	w.met.otel.close()
	if w.met.prom != nil {
		w.met.prom.detach(w)
	}
	if w.metricsSrv != nil {
		_ = w.metricsSrv.Close(fctx)
	}
	w.log.Info("worker stopped", slog.Duration("took", time.Since(begin)),
		slog.Int("unwritten", w.inflight.len()))
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitUntil waits for wg until the deadline and reports whether it finished.
func waitUntil(wg *sync.WaitGroup, deadline time.Time) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// wakeAll makes every pool claim now: jobs may have become claimable
// everywhere (a reap, a change of limits).
func (w *Worker) wakeAll() {
	for _, p := range w.pools {
		p.signal()
	}
}

// wakeReconnected makes every pool claim now, past the wait after a failed
// claim: the listener's connection came back, so the database did too.
func (w *Worker) wakeReconnected() {
	for _, p := range w.pools {
		p.signalReconnected()
	}
}

// wakeQueues makes the pools serving queues claim now.
func (w *Worker) wakeQueues(queues []string) {
	for _, q := range queues {
		for _, p := range w.byQueue[q] {
			p.limitTimes.notified() // jobs became ready there
			p.signal()
		}
	}
}

// slots is how many handlers the worker runs at once: its pools'
// concurrency summed.
func (w *Worker) slots() int {
	n := 0
	for _, p := range w.pools {
		n += p.cfg.Concurrency
	}
	return n
}
