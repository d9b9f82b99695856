package docket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/worker"
	"github.com/docketq/docket/internal/schedwire"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/docketq/docket/schedule"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures a Client. The zero value is an enqueue-only client for
// Docket's tables in schema "public".
type Config struct {
	// Outbox configures enqueue: the schema that holds Docket's tables,
	// history, NOTIFY. Its Kinds must be nil: NewClient sets it to Registry
	// (when given), so that every enqueue applies the kinds' registered
	// defaults and rejects kinds without a handler.
	Outbox outbox.Config

	// Registry holds the handlers this process runs. Nil makes an
	// enqueue-only client (a web service that enqueues kinds another
	// service runs): it accepts any kind, with the built-in defaults, and
	// Start and Stop do nothing.
	Registry *handlers.Registry

	// Worker tunes the worker that runs Registry's handlers (pools, poll
	// interval, lease, shutdown timeout, middleware, logger, metrics).
	// Ignored without a Registry.
	Worker WorkerConfig

	// Schedules are the recurring jobs this process keeps: Start registers
	// them (an idempotent upsert; every process may give the same list),
	// and the client writes each run's successor with its outcome, skips
	// late runs under the Skip misfire policy and restores lost runs, from
	// Start to Stop. Schedules of other kinds in the schema (another
	// service's) are left to the processes that run them. Every schedule's kind must have a handler in Registry,
	// or NewClient fails with schedule.ErrNoHandler. Schedules registered
	// later through Schedules().Register must be of these kinds too.
	Schedules []schedule.Schedule

	// Scheduler tunes the schedules (misfire grace, reconcile interval,
	// clock, logger). Its DB and Outbox must be nil: NewClient sets them.
	// A nil Logger means Worker.Logger.
	Scheduler schedule.Config

	// Relay, when set, runs an outbox relay in this process from Start to
	// Stop, publishing the events of Outbox's schema (see package
	// outbox/relay; its Schema must be empty: NewClient sets it). It runs
	// on enqueue-only clients too. Nil runs none (run `docket relay run`
	// elsewhere, or none if you publish no events).
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
// Config. Start and Stop run the worker and the schedules together.
//
// Every enqueue, through the client or through Outbox() (pgx, database/sql,
// package ent), applies the same defaults and rejects the same kinds.
// Operator operations are on Outbox() (status, pause, dead letters) and
// Schedules() (list, pause, trigger). A Client is safe for concurrent use.
type Client struct {
	ob     *outbox.Client
	worker *worker.Worker // nil: enqueue-only
	sched  *schedule.Service
	wire   schedwire.Engine
	cfg    []schedule.Schedule
	relay  *relay.Relay // nil: no relay in this process

	mu      sync.Mutex
	started bool
}

// NewClient returns a client that works through pool; it does not touch
// the database. It returns an error wrapping ErrInvalidConfig for fields
// NewClient sets itself (Outbox.Kinds, Scheduler.DB/Outbox), an invalid
// WorkerConfig or a nil pool; schedule.ErrNoHandler, naming the
// schedule, for a schedule whose kind has no handler in Registry (or
// Schedules without a Registry); and the errors of outbox.New,
// the worker and schedule.New, wrapped.
func NewClient(pool *pgxpool.Pool, cfg Config) (*Client, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrInvalidConfig)
	}
	if cfg.Outbox.Kinds != nil || cfg.Scheduler.DB != nil || cfg.Scheduler.Outbox != nil {
		return nil, fmt.Errorf("%w: leave Outbox.Kinds, Scheduler.DB and Scheduler.Outbox unset: NewClient sets them", ErrInvalidConfig)
	}
	kinds := scheduleKinds(cfg.Schedules)
	for _, s := range cfg.Schedules {
		if s.Args == nil {
			continue // schedule.Register reports it with the schedule's name
		}
		if cfg.Registry == nil {
			return nil, fmt.Errorf("%w: schedule %q: kind %s: a client without a Registry runs no schedules", schedule.ErrNoHandler, s.Name, s.Args.Kind())
		}
		if _, ok := cfg.Registry.KindOpts(s.Args.Kind()); !ok {
			return nil, fmt.Errorf("%w: schedule %q: kind %s is not registered", schedule.ErrNoHandler, s.Name, s.Args.Kind())
		}
	}

	ocfg := cfg.Outbox
	if cfg.Registry != nil {
		ocfg.Kinds = cfg.Registry
	}
	ob, err := outbox.New(ocfg)
	if err != nil {
		return nil, fmt.Errorf("docket: new client: %w", err)
	}
	scfg := cfg.Scheduler
	scfg.DB, scfg.Outbox = pool, ob
	if scfg.Logger == nil {
		scfg.Logger = cfg.Worker.Logger
	}
	sched, err := schedule.New(scfg)
	if err != nil {
		return nil, fmt.Errorf("docket: new client: %w", err)
	}
	c := &Client{ob: ob, sched: sched, wire: schedwire.Of(sched), cfg: slices.Clone(cfg.Schedules)}
	if cfg.Relay != nil {
		if cfg.Relay.Schema != "" {
			return nil, fmt.Errorf("%w: leave Relay.Schema unset: NewClient sets it to Outbox's", ErrInvalidConfig)
		}
		rcfg := *cfg.Relay
		rcfg.Schema = ob.Schema()
		if rcfg.Logger == nil {
			rcfg.Logger = cfg.Worker.Logger
		}
		if c.relay, err = relay.New(pool, rcfg); err != nil {
			return nil, fmt.Errorf("docket: new client: %w", err)
		}
	}
	// Also with no kinds: then Schedules().Register rejects every schedule
	// instead of registering one no worker of this client would advance.
	var kindsReg outbox.Kinds
	if cfg.Registry != nil {
		kindsReg = cfg.Registry
	}
	c.wire.Attach(kindsReg, kinds)
	if cfg.Registry == nil {
		return c, nil
	}
	wcfg := workerConfig(cfg.Worker)
	wcfg.DB, wcfg.Outbox, wcfg.Handlers, wcfg.Propagator = pool, ob, cfg.Registry, cfg.Outbox.Propagator
	if len(wcfg.Pools) == 0 {
		wcfg.Pools = []worker.PoolConfig{{Name: "default", Queues: servedQueues(cfg.Registry, cfg.Schedules)}}
	}
	if len(kinds) > 0 {
		wcfg.Hooks = map[string]worker.OutcomeHook{}
		for _, k := range kinds {
			wcfg.Hooks[k] = c.wire.Hook
		}
		// Outermost, so that a skipped run reaches no other middleware.
		wcfg.Middleware = append([]handlers.Middleware{c.wire.Middleware}, wcfg.Middleware...)
	}
	if c.worker, err = worker.New(wcfg); err != nil {
		if errors.Is(err, worker.ErrInvalidConfig) {
			return nil, fmt.Errorf("%w: Worker: %w", ErrInvalidConfig, err)
		}
		return nil, fmt.Errorf("docket: new client: %w", err)
	}
	return c, nil
}

// scheduleKinds returns the kinds of schedules, sorted, without repeats.
func scheduleKinds(schedules []schedule.Schedule) []string {
	var kinds []string
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
	qs := append([]string{outbox.DefaultQueue}, reg.Queues()...)
	for _, s := range schedules {
		if s.Queue != "" {
			qs = append(qs, s.Queue)
		}
	}
	slices.Sort(qs)
	return slices.Compact(qs)
}

// Start registers Config.Schedules, starts the worker, the schedules'
// reconciler and the relay (Config.Relay), and returns; they run until Stop or until ctx ends. It fails
// with outbox.ErrNotMigrated before `docket migrate up`, with the
// errors of schedule.Service.Register for invalid schedules (nothing of
// them is written), and with ErrStarted when called twice. On an
// enqueue-only client it starts only the relay, if any. A failed Start may be retried.
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
		if err := c.wire.Start(ctx); err != nil {
			_ = c.worker.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("docket: start: schedules: %w", err)
		}
	}
	if c.relay != nil {
		if err := c.relay.Start(ctx); err != nil {
			_ = c.wire.Stop(context.WithoutCancel(ctx))
			_ = c.worker.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("docket: start: relay: %w", err)
		}
	}
	c.started = true
	return nil
}

// Stop stops the relay (finishing its round in flight and giving its
// partitions back), the schedules' reconciler, then shuts the worker down
// gracefully: in-flight jobs get until
// Worker.ShutdownTimeout or ctx's deadline to finish. It is idempotent and
// does nothing on a client never started.
func (c *Client) Stop(ctx context.Context) error {
	var err error
	if c.relay != nil {
		err = c.relay.Stop(ctx)
	}
	if c.worker == nil {
		return err
	}
	if werr := c.wire.Stop(ctx); err == nil {
		err = werr
	}
	if werr := c.worker.Stop(ctx); err == nil {
		err = werr
	}
	return err
}

// Enqueue writes one job through db, the caller's pgx.Tx (to commit the job
// with the caller's writes) or a pool or connection. It is
// outbox.Client.Enqueue of Outbox(): database/sql callers use
// Outbox().EnqueueSQL, Ent callers package ent.
func (c *Client) Enqueue(ctx context.Context, db outbox.Pgx, args Args, opts outbox.Opts) (outbox.Enqueued, error) {
	return c.ob.Enqueue(ctx, db, args, opts)
}

// EnqueueMany writes many jobs in one call (COPY where it can): it is
// outbox.Client.EnqueueMany of Outbox().
func (c *Client) EnqueueMany(ctx context.Context, db outbox.Pgx, items []outbox.Item) ([]outbox.Enqueued, error) {
	return c.ob.EnqueueMany(ctx, db, items)
}

// Outbox returns the outbox client: enqueue through database/sql
// (EnqueueSQL, EnqueueManySQL) and Ent, and the operator operations
// (status, pause and resume of queues, dead letters, cancel and retry).
func (c *Client) Outbox() *outbox.Client { return c.ob }

// Schedules returns the schedule operations: List, Stale, Pause, Resume,
// Remove, Trigger, Reconcile, and Register for schedules added at run time
// (of the kinds of Config.Schedules).
func (c *Client) Schedules() *schedule.Service { return c.sched }

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
