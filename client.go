package docket

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/docketq/docket/internal/engine/worker"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/schedule"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/propagation"
)

// Config configures a Client. The zero value is an enqueue-only client for
// Docket's tables in schema "public": every field a user may leave unset,
// none that NewClient sets itself.
type Config struct {
	// Schema is the PostgreSQL schema (namespace) that holds Docket's
	// tables. Empty means "public". It must be a plain lower-case
	// identifier (letters, digits, _) of at most 56 bytes, so that the
	// LISTEN/NOTIFY channel "docket_<schema>" fits PostgreSQL's 63-byte
	// limit.
	Schema string

	// DisableHistory deletes completed jobs instead of moving them to
	// docket_jobs_done. Faster; loses the record of finished work.
	DisableHistory bool

	// NotifyDebounce is the shortest interval between two NOTIFYs this
	// client sends for one queue (and for committed events). Zero means
	// 2ms; -1 disables NOTIFY entirely, leaving workers and relays to their
	// poll intervals.
	NotifyDebounce time.Duration

	// Propagator writes the trace context of an enqueue's (or publish's)
	// ctx into the job's meta (or the event's headers), where the worker
	// reads it back to make the job's run span a child of the enqueuer's
	// span (see Tracing in package handlers). It is used only when ctx
	// carries a valid span, and never overwrites a key the caller set. Nil
	// means W3C Trace Context (propagation.TraceContext), whatever the
	// global propagator is; pass otel.GetTextMapPropagator() to follow the
	// global one instead, or propagation.NewCompositeTextMapPropagator()
	// to write nothing.
	Propagator propagation.TextMapPropagator

	// MaxEventPayload is the largest event payload Outbox().Publish
	// accepts, in bytes. Zero means outbox.DefaultMaxEventPayload (1 MiB);
	// -1 means no limit but one row's.
	MaxEventPayload int

	// Registry holds the handlers this process runs. Nil makes an
	// enqueue-only client (a web service that enqueues kinds another
	// service runs): it accepts any kind, with the built-in defaults, and
	// Start and Stop do nothing but the relay. With a Registry, every
	// enqueue applies the kinds' registered defaults and refuses a kind
	// without a handler (ErrUnknownKind).
	Registry *handlers.Registry

	// Worker tunes the worker that runs Registry's handlers (pools, poll
	// interval, lease, shutdown timeout, middleware, logger, metrics).
	// Ignored without a Registry.
	Worker WorkerConfig

	// Schedules are the recurring jobs this process keeps: Start registers
	// them (an idempotent upsert; every process may give the same list),
	// and the client writes each run's successor with its outcome,
	// coalesces missed runs under the Skip misfire policy and restores lost
	// runs of their kinds, from Start to Stop. Schedules of other kinds in
	// the same schema, kept by other services, are left to them. Every
	// schedule's kind must have a handler in Registry, or NewClient fails
	// with schedule.ErrNoHandler. Schedules registered later through
	// RegisterSchedules must be of these kinds too.
	Schedules []schedule.Schedule

	// Scheduler tunes the schedules (misfire grace, reconcile interval,
	// clock, logger). A nil Logger means Worker.Logger.
	Scheduler schedule.Config

	// Relay, when set, runs an outbox relay in this process from Start to
	// Stop, publishing the events of Schema (see package outbox/relay; its
	// Schema may be left empty, and NewClient refuses another schema than
	// Config.Schema). It runs on enqueue-only clients too. Nil
	// runs none (run `docket relay run` elsewhere, or none if you publish
	// no events).
	Relay *relay.Config
}

// ErrInvalidConfig wraps every error of NewClient about its Config.
var ErrInvalidConfig = errors.New("docket: invalid client config")

// ErrStarted is returned by Start on a client that was started before.
var ErrStarted = worker.ErrStarted

// ErrNotifyLost is what Client.NotifyCheck reports when the worker's LISTEN
// connection did not hear the NOTIFY it sent itself: notifications do not
// reach it (a transaction pooler in the way), and it finds jobs only by
// polling. Give it WorkerConfig.ListenURL straight to PostgreSQL.
var ErrNotifyLost = worker.ErrNotifyLost

// Client is Docket's front door: one handle to enqueue jobs, run their
// handlers and keep recurring schedules, built from one pool and one
// Config. Start and Stop run the worker, the schedules and the relay
// together.
//
// Every enqueue, through the client (pgx, database/sql, bulk, workflows)
// or package ent, applies the same defaults and refuses the same kinds.
// Outbox returns the events' side (publish, inbox); Admin the operator
// operations (status, queues, dead letters, limits, workflows, schedules).
// A Client is safe for concurrent use.
type Client struct {
	pool   *pgxpool.Pool
	jobs   *enqueue.Client
	events *outbox.Client
	ops    *admin.Client
	worker *worker.Worker     // nil: enqueue-only
	sched  *scheduler.Service // nil: no schedules
	cfg    []schedule.Schedule
	relay  *relay.Relay // nil: no relay in this process

	mu      sync.Mutex
	started bool
}

// NewClient returns a client that works through pool; it does not touch
// the database. It returns an error wrapping ErrInvalidConfig for a nil
// pool or an invalid WorkerConfig; ErrInvalidSchema for an invalid
// Schema; schedule.ErrNoHandler, naming the schedule, for a schedule whose
// kind has no handler in Registry (or Schedules without a Registry).
func NewClient(pool *pgxpool.Pool, cfg Config) (*Client, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrInvalidConfig)
	}
	kinds := scheduleKinds(cfg.Schedules)
	for _, s := range cfg.Schedules {
		if s.Args == nil {
			continue // registration reports it with the schedule's name
		}
		if cfg.Registry == nil {
			return nil, fmt.Errorf("%w: schedule %q: kind %s: a client without a Registry runs no schedules", schedule.ErrNoHandler, s.Name, s.Args.Kind())
		}
		if _, ok := cfg.Registry.KindOpts(s.Args.Kind()); !ok {
			return nil, fmt.Errorf("%w: schedule %q: kind %s is not registered", schedule.ErrNoHandler, s.Name, s.Args.Kind())
		}
	}
	var kindsReg enqueue.Kinds
	if cfg.Registry != nil {
		kindsReg = cfg.Registry
	}
	jobs, err := enqueue.New(enqueue.Config{Schema: cfg.Schema, NotifyDebounce: cfg.NotifyDebounce, Kinds: kindsReg,
		Propagator: cfg.Propagator, DisableHistory: cfg.DisableHistory})
	if err != nil {
		return nil, err
	}
	events, err := outbox.New(outbox.Config{Schema: cfg.Schema, NotifyDebounce: cfg.NotifyDebounce, Propagator: cfg.Propagator, MaxEventPayload: cfg.MaxEventPayload})
	if err != nil {
		return nil, err
	}
	ops, err := admin.New(admin.Config{Schema: cfg.Schema})
	if err != nil {
		return nil, err
	}
	c := &Client{pool: pool, jobs: jobs, events: events, ops: ops, cfg: slices.Clone(cfg.Schedules)}
	for i := range c.cfg {
		c.cfg[i] = withArgsOpts(c.cfg[i])
	}
	if cfg.Relay != nil {
		rcfg := *cfg.Relay
		if rcfg.Schema != "" && rcfg.Schema != jobs.Schema() {
			return nil, fmt.Errorf("%w: Relay.Schema %q is not the client's schema %q: a client relays its own events", ErrInvalidConfig, rcfg.Schema, jobs.Schema())
		}
		rcfg.Schema = jobs.Schema()
		if rcfg.Logger == nil {
			rcfg.Logger = cfg.Worker.Logger
		}
		if c.relay, err = relay.New(pool, rcfg); err != nil {
			return nil, fmt.Errorf("docket: new client: %w", err)
		}
	}
	if cfg.Registry == nil {
		return c, nil
	}
	if c.sched, err = scheduler.New(scheduler.Config{
		DB: pool, Jobs: jobs, Kinds: cfg.Registry, Attached: kinds,
		ReconcileInterval: cfg.Scheduler.ReconcileInterval, Grace: cfg.Scheduler.Grace,
		Clock: cfg.Scheduler.Clock, Logger: cmp.Or(cfg.Scheduler.Logger, cfg.Worker.Logger),
	}); err != nil {
		return nil, fmt.Errorf("%w: Scheduler: %w", ErrInvalidConfig, err)
	}
	if c.worker, err = newWorker(pool, cfg, c.sched, kinds); err != nil {
		return nil, err
	}
	return c, nil
}

// newWorker builds the engine that runs cfg.Registry's handlers, with the
// schedules' hook and middleware on their kinds.
func newWorker(pool *pgxpool.Pool, cfg Config, sched *scheduler.Service, kinds []string) (*worker.Worker, error) {
	m, err := migrate.New(cfg.Schema)
	if err != nil {
		return nil, err
	}
	wcfg := workerConfig(cfg.Worker)
	wcfg.DB, wcfg.Handlers, wcfg.Propagator = pool, cfg.Registry, cfg.Propagator
	wcfg.Schema, wcfg.DisableHistory, wcfg.NotifyDebounce = cfg.Schema, cfg.DisableHistory, cfg.NotifyDebounce
	wcfg.LatestMigration = m.Latest()
	if len(wcfg.Pools) == 0 {
		wcfg.Pools = []worker.PoolConfig{{Name: "default", Queues: servedQueues(cfg.Registry, cfg.Schedules)}}
	}
	if cfg.Worker.MetricsStatus {
		ops, err := admin.New(admin.Config{Schema: cfg.Schema})
		if err != nil {
			return nil, err
		}
		wcfg.Collectors = append(wcfg.Collectors, admin.NewStatusCollector(pool, ops, admin.Thresholds{}))
	}
	if len(kinds) > 0 {
		wcfg.Hooks = map[string]worker.OutcomeHook{}
		for _, k := range kinds {
			wcfg.Hooks[k] = sched.Hook()
		}
		// Outermost, so that a skipped run reaches no other middleware.
		wcfg.Middleware = append([]handlers.Middleware{sched.Middleware()}, wcfg.Middleware...)
	}
	w, err := worker.New(wcfg)
	if errors.Is(err, worker.ErrInvalidConfig) {
		return nil, fmt.Errorf("%w: Worker: %w", ErrInvalidConfig, err)
	}
	if err != nil {
		return nil, fmt.Errorf("docket: new client: %w", err)
	}
	return w, nil
}

// withArgsOpts fills the fields s leaves zero from the args' own options
// (OptsProvider), as an enqueue would: the schedule's fields win over the
// args' Opts, which win over the kind's registered defaults. The runs
// re-enqueue the stored payload, which has no Opts method, so they are
// taken here, once. A run's unique key, time and meta are the schedule's
// own.
func withArgsOpts(s schedule.Schedule) schedule.Schedule {
	p, ok := s.Args.(OptsProvider)
	if !ok {
		return s
	}
	o := p.Opts()
	s.Queue = cmp.Or(s.Queue, o.Queue)
	s.Priority = cmp.Or(s.Priority, o.Priority)
	s.MaxAttempts = cmp.Or(s.MaxAttempts, o.MaxAttempts)
	s.Tenant = cmp.Or(s.Tenant, o.Tenant)
	s.SerialKey = cmp.Or(s.SerialKey, o.SerialKey)
	return s
}

// scheduleKinds returns the kinds of schedules, sorted, without repeats.
func scheduleKinds(schedules []schedule.Schedule) []string {
	kinds := []string{} // not nil: a client with no schedules is wired, for none
	for _, s := range schedules {
		if s.Args != nil {
			kinds = append(kinds, s.Args.Kind())
		}
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// servedQueues is what the default pool claims from: "default", the
// registered kinds' queues and the schedules' queues.
func servedQueues(reg *handlers.Registry, schedules []schedule.Schedule) []string {
	qs := append([]string{DefaultQueue}, reg.Queues()...)
	for _, s := range schedules {
		if s.Queue != "" {
			qs = append(qs, s.Queue)
		}
	}
	slices.Sort(qs)
	return slices.Compact(qs)
}

// Start registers Config.Schedules, starts the worker, the schedules'
// reconciler and the relay (Config.Relay), and returns; they run until Stop
// or until ctx ends. It fails with ErrNotMigrated before `docket migrate
// up`, with the errors of RegisterSchedules for invalid schedules (nothing
// of them is written), and with ErrStarted when called twice. On an
// enqueue-only client it starts only the relay, if any. A failed Start may
// be retried.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return ErrStarted
	}
	if c.worker == nil {
		if c.relay != nil {
			if err := c.relay.Start(ctx); err != nil {
				return err
			}
			c.started = true
		}
		return nil
	}
	if len(c.cfg) > 0 {
		if err := c.sched.Register(ctx, c.cfg...); err != nil {
			return fmt.Errorf("docket: start: %w", err)
		}
	}
	if err := c.worker.Start(ctx); err != nil {
		return err
	}
	if len(c.cfg) > 0 {
		if err := c.sched.Start(ctx); err != nil {
			_ = c.worker.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("docket: start: schedules: %w", err)
		}
	}
	if c.relay != nil {
		if err := c.relay.Start(ctx); err != nil {
			_ = c.sched.Stop(context.WithoutCancel(ctx))
			_ = c.worker.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("docket: start: relay: %w", err)
		}
	}
	c.started = true
	return nil
}

// Stop stops the relay (finishing its round in flight and giving its
// partitions back), the schedules' reconciler, then shuts the worker down
// gracefully: in-flight jobs get until WorkerConfig.ShutdownTimeout or
// ctx's deadline to finish. It is idempotent and does nothing on a client
// never started.
func (c *Client) Stop(ctx context.Context) error {
	var err error
	if c.relay != nil {
		err = c.relay.Stop(ctx)
	}
	if c.worker == nil {
		return err
	}
	if serr := c.sched.Stop(ctx); err == nil {
		err = serr
	}
	if werr := c.worker.Stop(ctx); err == nil {
		err = werr
	}
	return err
}

// RegisterSchedules registers schedules at run time, as Start registers
// Config.Schedules: an idempotent upsert by name; a new schedule gets its
// pending run at once, a changed one takes effect from its next run. Their
// kinds must be among Config.Schedules' (the kinds the client's worker
// writes successors for), or it fails with schedule.ErrNoHandler. An
// invalid schedule (schedule.ErrInvalidSchedule, ErrInvalidSpec, naming it)
// or two of one name write nothing. It fails with ErrNotMigrated before
// `docket migrate up`.
func (c *Client) RegisterSchedules(ctx context.Context, schedules ...schedule.Schedule) error {
	if c.sched == nil {
		for _, s := range schedules {
			if s.Args != nil {
				return fmt.Errorf("%w: schedule %q: kind %s: a client without a Registry runs no schedules", schedule.ErrNoHandler, s.Name, s.Args.Kind())
			}
		}
		return nil
	}
	list := make([]schedule.Schedule, len(schedules))
	for i, s := range schedules {
		list[i] = withArgsOpts(s)
	}
	return c.sched.Register(ctx, list...)
}

// Outbox returns the events' side of the client: publish in the caller's
// transaction, the consumers' inbox, dead events.
func (c *Client) Outbox() *outbox.Client { return c.events }

// Admin returns the operator operations on the client's schema: status,
// single jobs, dead letters, queues, limits, workflows, schedules.
func (c *Client) Admin() *admin.Client { return c.ops }

// Schema returns the schema that holds the client's tables.
func (c *Client) Schema() string { return c.jobs.Schema() }

// WorkerID returns the id of the client's worker, the value of locked_by
// on the jobs it runs, or the zero UUID for an enqueue-only client.
func (c *Client) WorkerID() uuid.UUID {
	if c.worker == nil {
		return uuid.Nil
	}
	return c.worker.ID()
}

// MetricsAddr returns the address the worker's metrics endpoint listens on
// (useful with WorkerConfig.MetricsAddr ":0"), or "" when it serves none.
func (c *Client) MetricsAddr() string {
	if c.worker == nil {
		return ""
	}
	return c.worker.MetricsAddr()
}

// NotifyCheck reports what the worker found the last time it checked that
// notifications reach it (WorkerConfig.NotifyCheckTimeout): done is false
// until a check has ended, err is nil when its LISTEN connection heard the
// NOTIFY it sent itself and wraps ErrNotifyLost when it did not. With no
// worker, notifications off or the check off it returns true, nil.
func (c *Client) NotifyCheck() (done bool, err error) {
	if c.worker == nil {
		return true, nil
	}
	return c.worker.NotifyCheck()
}
