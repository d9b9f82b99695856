package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/worker"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The scenarios, as named by Config.Scenario and Result.Scenario.
const (
	ScenarioInsert    = "insert"
	ScenarioDrain     = "drain"
	ScenarioSustained = "sustained"
	ScenarioIdle      = "idle"
	// ScenarioHandlers drains jobs whose handlers take time (HandlerMin to
	// HandlerMax) and compares the rate with what the slots could do if
	// none ever waited for a claim.
	ScenarioHandlers = "handlers"
	// ScenarioLimit measures PostgreSQL's own limits for drain and insert
	// (see the drain and insert results' fraction_of_limit, measured in
	// the same run). ScenarioAll leaves it out: drain and insert measure
	// their limits themselves.
	ScenarioLimit = "limit"
	// ScenarioHeldXmin measures claims while a long transaction holds back
	// the vacuum horizon; it takes minutes, so ScenarioAll leaves it out.
	ScenarioHeldXmin = "heldxmin"
	// ScenarioFlowControl drains a backlog of which a share is a kind under
	// a flow-control limit (admin.Limit), once per limit variant, and
	// reports limited and ordinary claims apart, one result per variant.
	ScenarioFlowControl = "flowcontrol"
	// ScenarioWorkflows runs chains of three workflow steps, each recording
	// a result that the next reads, and compares the steps per second with
	// the same number of no-op jobs drained by the same worker.
	ScenarioWorkflows = "workflows"
	// ScenarioSerial drains jobs spread over Config.SerialKeys serial keys
	// and reports the hand-off from one job of a key to the next, and the
	// rate against the same number of jobs without keys.
	ScenarioSerial = "serial"
	// ScenarioMultiDB starts private PostgreSQL clusters and drains jobs
	// in 1, 2, … of them at once (Config.Databases) from one process with
	// one client per database; ScenarioAll leaves it out.
	ScenarioMultiDB = "multidb"
	// ScenarioAll runs every scenario of [Scenarios] once, in that order.
	ScenarioAll = "all"
)

// Scenarios lists the scenarios in the order ScenarioAll runs them.
var Scenarios = []string{ScenarioInsert, ScenarioDrain, ScenarioHandlers, ScenarioSustained, ScenarioIdle, ScenarioWorkflows,
	ScenarioSerial, ScenarioFlowControl}

// Defaults of Config's zero values.
const (
	DefaultJobs      = 100_000
	DefaultBatch     = 1000
	DefaultProducers = 32
	DefaultRate      = 1000
	DefaultDuration  = 20 * time.Second
)

// The idle scenario's shape: one job every IdleInterval, Config.IdleJobs
// jobs (DefaultIdleJobs when zero).
const (
	DefaultIdleJobs = 200
	IdleInterval    = 100 * time.Millisecond
)

// WorkerConns is the size of the worker's own connection pool. No-op jobs
// hold no connection while they run, so the worker needs only a few: one
// claim loop, two outcome flushers, heartbeat and maintenance (LISTEN has a
// connection of its own).
const WorkerConns = 10

// stallTimeout is how long a scenario waits without any job making progress
// before it gives up, so a broken worker fails the run instead of hanging it.
const stallTimeout = time.Minute

// Config says what to measure. Every zero value means the documented
// default; negative numbers are invalid.
type Config struct {
	// Scenario is one of [Scenarios] or [ScenarioAll]. Required.
	Scenario string
	// Jobs is how many jobs insert enqueues and drain drains, and how many
	// workflows the workflows scenario runs (at most AllWorkflows under
	// ScenarioAll). Zero means DefaultJobs (100,000), or DefaultWorkflows
	// (10,000) for workflows.
	Jobs int
	// Batch is the jobs per transaction of insert, and of drain's untimed
	// fill. Zero means DefaultBatch (1,000).
	Batch int
	// Workers is the worker's concurrency (its one pool's slots). Zero
	// means the worker's default, worker.DefaultConcurrency, or
	// DefaultHandlerSlots (32) for handlers, also under ScenarioAll.
	Workers int
	// HandlerMin and HandlerMax bound the random time each handler of
	// the handlers scenario sleeps. Zero means DefaultHandlerMin (2 ms)
	// and DefaultHandlerMax (5 ms).
	HandlerMin, HandlerMax time.Duration
	// Producers is the number of goroutines that enqueue in sustained, each
	// one job per transaction. Zero means DefaultProducers (32).
	Producers int
	// Inserters is how many connections insert enqueue batches on at once
	// (insert, and drain's untimed fill). Zero means 1.
	Inserters int
	// Processes is how many worker processes drain runs, each with Workers
	// slots. Zero means 1, a worker inside this process; more need
	// WorkerProcess.
	Processes int
	// WorkerProcess returns a command that runs ServeWorker on schema with
	// this Config's Workers, history and notify settings. Its standard
	// input and output are the bench's; its standard error, when unset,
	// goes to Progress.
	WorkerProcess func(schema string) *exec.Cmd
	// ProducerTx makes each producer's enqueue (sustained, idle, heldxmin)
	// an explicit transaction, BEGIN; Enqueue; COMMIT, as when a job is
	// committed with the caller's own writes. Otherwise Enqueue runs on the
	// pool, its statement a transaction of its own: one round trip
	// instead of three.
	ProducerTx bool
	// Rate is the total target enqueue rate in jobs per second of sustained
	// and heldxmin. Zero means DefaultRate (1,000), or DefaultHeldRate
	// (2,000) for heldxmin.
	Rate int
	// Duration is how long sustained produces. Zero means DefaultDuration
	// (20s).
	Duration time.Duration
	// Baseline, Held and Recovery are the heldxmin scenario's phases: before,
	// while and after a transaction holds back the vacuum horizon. Zero
	// means 60s, 300s and 90s.
	Baseline, Held, Recovery time.Duration
	// Window is how often heldxmin reports. Zero means DefaultHeldWindow
	// (10s).
	Window time.Duration
	// HeldLimitedRate, when positive, makes heldxmin also run a kind under
	// a rate limit of HeldLimitedRate jobs/s, offered at twice that rate so
	// that the limit, not the producers, sets its pace. Zero means none.
	HeldLimitedRate int
	// LimitedShare is the fraction of flowcontrol's backlog that is the
	// limited kind, spread evenly through it. Zero means
	// DefaultLimitedShare (0.1); at most 1.
	LimitedShare float64
	// LimitRate is the rate limit, in jobs/s, of flowcontrol's rate
	// variant. Zero means DefaultLimitRate (1,000).
	LimitRate int
	// LimitRunning is the per-tenant concurrency limit of flowcontrol's
	// concurrency variant. Zero means DefaultLimitRunning (5).
	LimitRunning int
	// LimitTenants is how many tenants flowcontrol's limited jobs are
	// spread over, round robin. Zero means DefaultLimitTenants (10).
	LimitTenants int
	// LimitedSleep makes flowcontrol's limited handlers sleep a random
	// time between HandlerMin and HandlerMax, and its concurrency variant
	// report the bound of its places (places / mean handler time). False
	// means they return at once.
	LimitedSleep bool
	// LimitVariants are the flowcontrol variants to run, in order, each
	// one of LimitVariants. Empty means all of them.
	LimitVariants []string
	// SerialKeys is how many serial keys the serial scenario spreads its
	// jobs over, round robin. Zero means DefaultSerialKeys (20).
	SerialKeys int
	// IdleJobs is how many jobs the idle scenario enqueues, one every
	// IdleInterval. Zero means DefaultIdleJobs (200).
	IdleJobs int
	// SerialHandler is how long each handler of the serial scenario (and
	// of its drain without keys) sleeps. Zero means not at all.
	SerialHandler time.Duration
	// Databases are the multidb scenario's database counts, in the order
	// it measures them. Empty means DefaultDatabases (1, 2, 3).
	Databases []int
	// MultiDBHandler is how long each handler of the multidb scenario
	// sleeps. Zero means not at all.
	MultiDBHandler time.Duration
	// DisableHistory deletes completed jobs instead of moving them to the
	// history table (docket.Config.DisableHistory).
	DisableHistory bool
	// PollOnly turns LISTEN/NOTIFY off everywhere: enqueues send no NOTIFY
	// (outbox.Config.NotifyDebounce = -1) and the worker does not listen
	// (worker.Config.DisableNotify), so it finds jobs by polling only.
	PollOnly bool
	// CPUProfile, when set, is a file that receives a Go CPU profile of the
	// timed part of the scenario. With ScenarioAll each scenario writes its
	// own file, named by inserting the scenario before the extension
	// (cpu.prof becomes cpu.drain.prof).
	CPUProfile string
	// Progress receives progress and diagnostics. Nil means none.
	Progress io.Writer
	// ProgressBar redraws one progress line with carriage returns, for a
	// terminal; otherwise progress is printed as a line now and then.
	ProgressBar bool
	// Logger receives the worker's logs. Nil means warnings and errors are
	// written to Progress.
	Logger *slog.Logger
}

// ErrInvalidConfig wraps every validation failure of New.
var ErrInvalidConfig = errors.New("docket bench: invalid config")

// Runner runs the scenarios of one Config. Create it with New.
type Runner struct {
	cfg       Config
	scenarios []string
	// handlerSlots is the handlers scenario's slots: Config.Workers, or
	// DefaultHandlerSlots when unset.
	handlerSlots int
}

// New validates cfg and fills in its defaults. It returns an error wrapping
// ErrInvalidConfig for an unknown scenario or a negative number or
// duration.
func New(cfg Config) (*Runner, error) {
	bad := func(format string, args ...any) (*Runner, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	var scenarios []string
	switch {
	case cfg.Scenario == ScenarioAll:
		scenarios = slices.Clone(Scenarios)
	case slices.Contains(Scenarios, cfg.Scenario) || cfg.Scenario == ScenarioHeldXmin || cfg.Scenario == ScenarioLimit ||
		cfg.Scenario == ScenarioMultiDB:
		scenarios = []string{cfg.Scenario}
	case cfg.Scenario == "":
		return bad("no scenario: want one of %s or %s", strings.Join(Scenarios, ", "), ScenarioAll)
	default:
		return bad("unknown scenario %q: want one of %s, %s, %s, %s or %s", cfg.Scenario, strings.Join(Scenarios, ", "),
			ScenarioLimit, ScenarioHeldXmin, ScenarioMultiDB, ScenarioAll)
	}
	for name, v := range map[string]int{"jobs": cfg.Jobs, "batch": cfg.Batch, "workers": cfg.Workers,
		"producers": cfg.Producers, "rate": cfg.Rate, "inserters": cfg.Inserters, "processes": cfg.Processes, "held-limited-rate": cfg.HeldLimitedRate,
		"limit-rate": cfg.LimitRate, "limit-running": cfg.LimitRunning, "limit-tenants": cfg.LimitTenants,
		"keys": cfg.SerialKeys} {
		if v < 0 {
			return bad("negative %s %d", name, v)
		}
	}
	for name, d := range map[string]time.Duration{"duration": cfg.Duration, "baseline": cfg.Baseline, "held": cfg.Held, "recovery": cfg.Recovery, "window": cfg.Window,
		"handler-min": cfg.HandlerMin, "handler-max": cfg.HandlerMax, "handler-time": cfg.SerialHandler, "multidb handler time": cfg.MultiDBHandler} {
		if d < 0 {
			return bad("negative %s %s", name, d)
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if cfg.Scenario == ScenarioWorkflows {
		def(&cfg.Jobs, DefaultWorkflows)
	}
	if cfg.Scenario == ScenarioMultiDB {
		def(&cfg.Jobs, DefaultMultiDBJobs)
	}
	def(&cfg.Jobs, DefaultJobs)
	if len(cfg.Databases) == 0 {
		cfg.Databases = DefaultDatabases
	}
	for _, k := range cfg.Databases {
		if k < 1 {
			return bad("database count %d: want at least 1", k)
		}
	}
	def(&cfg.Batch, DefaultBatch)
	// The handlers scenario's slots, also under ScenarioAll.
	handlerSlots := cfg.Workers
	def(&handlerSlots, DefaultHandlerSlots)
	def(&cfg.Workers, worker.DefaultConcurrency)
	def(&cfg.Producers, DefaultProducers)
	def(&cfg.Inserters, 1)
	def(&cfg.Processes, 1)
	if cfg.Processes > 1 && cfg.WorkerProcess == nil {
		return bad("%d worker processes but no WorkerProcess to start them", cfg.Processes)
	}
	if cfg.Scenario == ScenarioHeldXmin {
		def(&cfg.Rate, DefaultHeldRate)
	}
	def(&cfg.Rate, DefaultRate)
	def(&cfg.LimitRate, DefaultLimitRate)
	def(&cfg.LimitRunning, DefaultLimitRunning)
	def(&cfg.LimitTenants, DefaultLimitTenants)
	if len(cfg.LimitVariants) == 0 {
		cfg.LimitVariants = LimitVariants
	}
	for _, v := range cfg.LimitVariants {
		if !slices.Contains(LimitVariants, v) {
			return bad("flowcontrol variant %q is none of %s", v, strings.Join(LimitVariants, ", "))
		}
	}
	def(&cfg.SerialKeys, DefaultSerialKeys)
	def(&cfg.IdleJobs, DefaultIdleJobs)
	if cfg.LimitedShare < 0 || cfg.LimitedShare > 1 {
		return bad("limited share %v outside 0..1", cfg.LimitedShare)
	}
	if cfg.LimitedShare == 0 {
		cfg.LimitedShare = DefaultLimitedShare
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defDur(&cfg.Duration, DefaultDuration)
	defDur(&cfg.Baseline, DefaultHeldBaseline)
	defDur(&cfg.Held, DefaultHeldHold)
	defDur(&cfg.Recovery, DefaultHeldRecovery)
	defDur(&cfg.Window, DefaultHeldWindow)
	defDur(&cfg.HandlerMin, DefaultHandlerMin)
	defDur(&cfg.HandlerMax, DefaultHandlerMax)
	if cfg.HandlerMax < cfg.HandlerMin {
		return bad("handler-max %s under handler-min %s", cfg.HandlerMax, cfg.HandlerMin)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	// Progress lines, the progress bar and the worker's logs are written
	// from several goroutines.
	cfg.Progress = &lockedWriter{w: cfg.Progress}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(cfg.Progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return &Runner{cfg: cfg, scenarios: scenarios, handlerSlots: handlerSlots}, nil
}

// Run runs the configured scenarios one after the other on the server db
// connects to, calling emit with each result as soon as it is measured. db
// is used for setup and for the single-connection enqueues (insert, idle,
// drain's fill); the producers and the worker get pools of their own with
// db's connection settings. Run stops at the first error, emit's included,
// and returns it; every schema it created is dropped before it returns.
func (r *Runner) Run(ctx context.Context, db *pgxpool.Pool, emit func(Result) error) error {
	for _, s := range r.scenarios {
		var (
			res Result
			err error
		)
		stamp := func(res Result) Result {
			res.Scenario, res.History, res.Notify = s, !r.cfg.DisableHistory, !r.cfg.PollOnly
			res.ProducerTx = r.cfg.ProducerTx
			return res
		}
		if s == ScenarioHeldXmin || s == ScenarioFlowControl || s == ScenarioMultiDB {
			run := r.heldXmin
			switch s {
			case ScenarioFlowControl:
				run = r.flowControl
			case ScenarioMultiDB:
				run = func(ctx context.Context, _ *pgxpool.Pool, emit func(Result) error) error { return r.multiDB(ctx, emit) }
			}
			if err := run(ctx, db, func(res Result) error { return emit(stamp(res)) }); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			continue
		}
		switch s {
		case ScenarioInsert:
			res, err = r.insert(ctx, db)
		case ScenarioDrain:
			res, err = r.drain(ctx, db)
		case ScenarioSustained:
			res, err = r.sustained(ctx, db)
		case ScenarioIdle:
			res, err = r.idle(ctx, db)
		case ScenarioHandlers:
			res, err = r.handlers(ctx, db)
		case ScenarioLimit:
			res, err = r.limit(ctx, db)
		case ScenarioWorkflows:
			res, err = r.workflows(ctx, db)
		case ScenarioSerial:
			res, err = r.serial(ctx, db)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		if err := emit(stamp(res)); err != nil {
			return err
		}
	}
	return nil
}

// logf writes one line of diagnostics to the progress writer.
func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Progress, "docket bench: "+format+"\n", args...)
}

// env is one scenario's schema, with an enqueue-only client (the path
// users enqueue through) and the operations for it.
type env struct {
	r      *Runner
	db     *pgxpool.Pool
	schema string
	jobs   *docket.Client
	ops    *admin.Client
	// debounce is the NOTIFY debounce of its enqueues and worker (-1: none).
	debounce time.Duration
	// onClaim, when set before worker is called, receives every claim's
	// round-trip time (worker.Config.OnClaim).
	onClaim func(took time.Duration, jobs int)
	// register, when set before worker is called, registers the kinds the
	// worker runs besides noop.
	register func(*handlers.Registry) error
	// tracer, when set before worker is called, traces the statements of
	// the worker's pool (see claimTracer).
	tracer pgx.QueryTracer
}

// setup creates and migrates a fresh schema. The caller must call drop,
// also when setup fails.
func (r *Runner) setup(ctx context.Context, db *pgxpool.Pool, scenario string) (*env, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails
	e := &env{r: r, db: db, schema: "docket_bench_" + hex.EncodeToString(b)}
	var err error
	e.debounce = r.cfg.notifyDebounce()
	if e.jobs, err = docket.NewClient(db, docket.Config{Schema: e.schema, DisableHistory: r.cfg.DisableHistory, NotifyDebounce: e.debounce}); err != nil {
		return e, err
	}
	if e.ops, err = admin.New(admin.Config{Schema: e.schema}); err != nil {
		return e, err
	}
	m, err := migrate.New(e.schema)
	if err != nil {
		return e, err
	}
	r.logf("%s: schema %s", scenario, e.schema)
	if _, err := m.Up(ctx, db); err != nil {
		return e, fmt.Errorf("migrate schema %s: %w", e.schema, err)
	}
	return e, nil
}

// notifyDebounce is the NOTIFY debounce of the scenario's enqueues and
// worker: none when it measures polling alone.
func (c Config) notifyDebounce() time.Duration {
	if c.PollOnly {
		return -1
	}
	return 0
}

// drop removes the scenario's schema, even after ctx was cancelled.
func (e *env) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.db.Exec(ctx, `DROP SCHEMA IF EXISTS "`+e.schema+`" CASCADE`); err != nil {
		e.r.logf("could not drop schema %s: %v (drop it by hand)", e.schema, err)
	}
}

// table is the quoted name of one of the scenario's tables.
func (e *env) table(name string) string { return `"` + e.schema + `".` + name }

// pool opens a pool of maxConns connections with db's settings.
func pool(ctx context.Context, db *pgxpool.Pool, maxConns int32) (*pgxpool.Pool, error) {
	cfg := db.Config()
	cfg.MaxConns, cfg.MinConns = maxConns, 0
	return pgxpool.NewWithConfig(ctx, cfg)
}

// warmPool opens a pool of n connections with db's settings and connects
// all of them, so that the timed part does not pay for connecting.
func warmPool(ctx context.Context, db *pgxpool.Pool, n int) (*pgxpool.Pool, error) {
	p, err := pool(ctx, db, int32(n))
	if err != nil {
		return nil, err
	}
	if err := warm(ctx, p, n); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// warm opens n connections of db and gives them back, so that the timed
// part does not pay for connecting.
func warm(ctx context.Context, db *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := db.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// noop is the benchmark's job: an empty payload whose handler does nothing
// but what the scenario measures.
type noop struct{}

func (noop) Kind() string { return "bench.noop" }

// worker starts a worker with its default configuration, apart from the
// concurrency and PollOnly, running h for every job, on a pool of its own.
// stop stops the worker and closes its pool.
func (e *env) worker(ctx context.Context, h handlers.HandlerFunc[noop]) (stop func(), err error) {
	return e.workerWith(ctx, h, e.r.cfg.Workers)
}

// workerWith is worker with slots slots.
func (e *env) workerWith(ctx context.Context, h handlers.HandlerFunc[noop], slots int) (stop func(), err error) {
	cfg := e.r.cfg
	pcfg := e.db.Config()
	pcfg.MaxConns, pcfg.MinConns = WorkerConns, 0
	if e.tracer != nil {
		pcfg.ConnConfig.Tracer = e.tracer
	}
	wdb, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	reg := handlers.NewRegistry()
	err = handlers.Register(reg, h, handlers.KindOpts{})
	if err == nil && e.register != nil {
		err = e.register(reg)
	}
	if err != nil {
		wdb.Close()
		return nil, err
	}
	w, err := worker.New(worker.Config{
		DB: wdb, Schema: e.schema, DisableHistory: e.r.cfg.DisableHistory, NotifyDebounce: e.debounce, Handlers: reg,
		Pools:         []worker.PoolConfig{{Queues: []string{docket.DefaultQueue}, Concurrency: slots}},
		DisableNotify: cfg.PollOnly,
		Logger:        cfg.Logger,
		OnClaim:       e.onClaim,
	})
	if err != nil {
		wdb.Close()
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		wdb.Close()
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = w.Stop(sctx)
		wdb.Close()
	}, nil
}

// wait polls done every interval until it reports true, ctx ends, or the
// value of progress has not changed for stallTimeout.
func wait(ctx context.Context, interval time.Duration, progress func() int64, done func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	last, lastAt := progress(), time.Now()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if n := progress(); n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > stallTimeout {
			return fmt.Errorf("stalled: no progress for %s", stallTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
