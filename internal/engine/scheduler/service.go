package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// Errors of the service. Each is wrapped with the schedule's name.
var (
	// ErrInvalidSchedule: a schedule given to Register is invalid (its
	// spec errors wrap ErrInvalidSpec instead).
	ErrInvalidSchedule = errors.New("docket: invalid schedule")
	// ErrNotFound: no schedule has that name.
	ErrNotFound = errors.New("docket: schedule not found")
	// ErrInvalidConfig: New was given an invalid Config.
	ErrInvalidConfig = errors.New("docket: invalid schedule service config")
	// ErrNoHandler: a schedule's kind has no handler in the worker that
	// runs the schedules (docket.NewClient), so no one would run it or
	// write its next run. Nothing of the schedules is registered.
	ErrNoHandler = errors.New("docket: schedule's kind has no handler")
)

// Defaults of Config's zero values.
const (
	// DefaultReconcileInterval is Config.ReconcileInterval's default.
	DefaultReconcileInterval = time.Minute
	// DefaultGrace is Config.Grace's default.
	DefaultGrace = time.Minute
)

// batchSize bounds the schedules written or reconciled per transaction.
const batchSize = 500

// Config configures a Service. DB and Jobs are required; every other zero
// value means the documented default (schedule.Config documents the tuning
// fields users set).
type Config struct {
	// DB is the handle the service reads and writes through: a pool (a
	// transaction for one operation).
	DB pgsql.TxDB
	// Jobs enqueues the runs, into the schema that holds the schedules.
	Jobs *enqueue.Client
	// Kinds resolves the options of runs of the kinds it knows, to store
	// them at registration (the client's registry); nil knows none.
	Kinds enqueue.Kinds
	// Attached are the kinds whose runs the worker passes through Hook and
	// Middleware (a client's Config.Schedules' kinds): the service
	// reconciles only schedules of these kinds and Register accepts only
	// them. Nil means not wired to a worker: every kind, for operations.
	Attached []string
	// ReconcileInterval is how often a running docket.Client re-creates
	// lost pending runs. Zero means 1 minute; -1 disables the loop (call
	// Reconcile yourself).
	ReconcileInterval time.Duration
	// Grace is how late a run may start before it counts as a misfire.
	// Zero means 1 minute.
	Grace time.Duration
	// Clock returns the current time. Nil means time.Now. Tests inject one
	// to simulate days in a second; fire times are computed from it, while
	// the database decides when a job is due by its own clock.
	Clock func() time.Time
	// Logger receives the service's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// Service registers schedules and runs their operations (List, Stale,
// Pause, Resume, Remove, Trigger, Reconcile, for package admin). Wired into
// a worker by docket.NewClient (Hook, Middleware, Start, Stop), it also
// inserts each schedule's next run when the current one finishes, skips
// runs that are paused, removed or late under the Skip policy, and
// re-creates lost runs periodically. Every process may run one at once;
// its methods are safe for concurrent use.
type Service struct {
	db       pgsql.TxDB
	jobs     *enqueue.Client
	q        queries
	interval time.Duration
	grace    time.Duration
	clock    func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	kinds   map[string]bool // kinds with the hook attached; nil: not wired to a worker
	reg     enqueue.Kinds   // the registry of the worker it is wired to; nil: none
	others  map[string]bool // kinds not attached whose schedules were logged as left alone
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// New validates cfg and returns a Service. It returns an error wrapping
// ErrInvalidConfig for a missing DB or Jobs or a negative duration other
// than ReconcileInterval -1.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Jobs == nil {
		return nil, fmt.Errorf("%w: DB and Jobs are required", ErrInvalidConfig)
	}
	if cfg.Grace < 0 || cfg.ReconcileInterval < -1 {
		return nil, fmt.Errorf("%w: negative Grace or ReconcileInterval", ErrInvalidConfig)
	}
	s := &Service{
		db: cfg.DB, jobs: cfg.Jobs, q: renderQueries(cfg.Jobs.Schema()), reg: cfg.Kinds,
		interval: cfg.ReconcileInterval, grace: cfg.Grace, clock: cfg.Clock, log: cfg.Logger,
	}
	if s.interval == 0 {
		s.interval = DefaultReconcileInterval
	}
	if s.grace == 0 {
		s.grace = DefaultGrace
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if cfg.Attached != nil {
		s.kinds = map[string]bool{}
		for _, k := range cfg.Attached {
			s.kinds[k] = true
		}
	}
	return s, nil
}

func (s *Service) now() time.Time { return s.clock() }

// Register writes schedules: an idempotent upsert by name, so every
// process may register the same set at start. A new schedule gets its
// pending run at once, at its first fire time after now; a changed spec or
// template takes effect from the next run (the pending one keeps its time
// and payload). Every schedule is validated first: if one is invalid
// (ErrInvalidSpec, ErrInvalidSchedule, naming it; its runs' job as
// docket.Validate checks it, also wrapping docket.ErrInvalidJob) or two
// share a name, nothing is written; so it is, with an error wrapping
// ErrNoHandler, when the service belongs to a docket.Client and a
// schedule's kind is not among its Config.Schedules' (no worker of the
// client would write its runs' successors). Before `docket migrate
// up` has created the schedules table it returns an error wrapping
// enqueue.ErrNotMigrated.
func (s *Service) Register(ctx context.Context, schedules ...Schedule) error {
	rows := make([]map[string]any, 0, len(schedules))
	seen := map[string]bool{}
	for _, sc := range schedules {
		c, err := compile(sc)
		if err != nil {
			return err
		}
		if err := s.checkKind(sc.Name, c.kind); err != nil {
			return err
		}
		if seen[sc.Name] {
			return fmt.Errorf("%w: schedule %q: registered twice in one call", ErrInvalidSchedule, sc.Name)
		}
		seen[sc.Name] = true
		sc := c.s // with the args' own options
		row := map[string]any{
			"name": sc.Name, "spec": sc.Spec, "time_zone": sc.TimeZone, "kind": c.kind,
			"queue": sc.Queue, "priority": sc.Priority,
			"tenant": sc.Tenant, "serial_key": sc.SerialKey, "max_attempts": sc.MaxAttempts,
			"payload": json.RawMessage(c.payload), "spread_ms": sc.Window.Milliseconds(),
			"misfire": string(c.misfire), "paused": sc.Paused,
		}
		if run := s.runOptions(sc); run != nil {
			row["run_queue"], row["run_priority"], row["run_max_attempts"] = run.Queue, run.Priority, run.MaxAttempts
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b map[string]any) int {
		return cmpString(a["name"].(string), b["name"].(string))
	})
	names := make([]string, 0, len(rows))
	for start := 0; start < len(rows); start += batchSize {
		chunk := rows[start:min(start+batchSize, len(rows))]
		// As json, in statements of bounded size: only each payload becomes
		// jsonb, within jsonb's limits on its own (docket.Validate).
		err := pgsql.JSONRows(chunk, func(doc string) error {
			_, err := s.db.Exec(ctx, s.q.upsert, doc)
			return err
		})
		if err != nil {
			return fmt.Errorf("docket: register schedules: %w", s.wrap(err))
		}
		for _, r := range chunk {
			names = append(names, r["name"].(string))
		}
	}
	_, err := s.reconcile(ctx, names, true)
	return err
}

// runOptions returns the queue, priority and max attempts of the
// schedule's runs as the enqueue of its runs resolves them (the template's,
// else the kind's registered defaults, else the built-in defaults), or nil
// when the service does not know the kind's defaults.
func (s *Service) runOptions(sc Schedule) *RunOptions {
	def, ok := s.kindDefaults(sc.Args.Kind())
	if !ok {
		return nil
	}
	run := &RunOptions{Queue: sc.Queue, Priority: sc.Priority, MaxAttempts: sc.MaxAttempts}
	if run.Queue == "" {
		run.Queue = cmp.Or(def.Queue, core.DefaultQueue)
	}
	if run.Priority == 0 {
		run.Priority = def.Priority
	}
	if run.MaxAttempts == 0 {
		run.MaxAttempts = cmp.Or(def.MaxAttempts, core.DefaultMaxAttempts)
	}
	return run
}

// checkKind rejects a schedule whose kind the worker it is wired to would
// not run with the schedule hook, which writes each run's successor.
func (s *Service) checkKind(name, kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds != nil && !s.kinds[kind] {
		return fmt.Errorf("%w: schedule %q: kind %s (give the client a schedule of this kind in Config.Schedules and register its handler)", ErrNoHandler, name, kind)
	}
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Reconcile gives every active schedule that has no pending run one: new
// schedules, schedules resumed after their run was skipped, runs deleted by
// hand or dead-lettered by the reaper. A lost run is re-created for the fire
// time it was for; if that is past by more than Grace, the misfire policy
// decides (Skip: the first fire time ahead; RunOnce: the latest missed fire
// time, run now). It is one insert per batch of schedules, ignoring those
// whose run exists (ON CONFLICT DO NOTHING on the unique key), under a
// transaction-scoped advisory lock: safe in every process at once. It
// returns how many runs it created.
//
// The service of a docket.Client reconciles only the schedules of the
// kinds of its Config.Schedules (those its worker writes successors for):
// schedules of other kinds, kept by other services sharing the schema or
// left behind by a removed kind, are left to the processes that run them,
// and each such kind is logged once per process at level INFO. A Service
// made with New reconciles every schedule.
func (s *Service) Reconcile(ctx context.Context) (int, error) {
	return s.reconcile(ctx, nil, false)
}

// reconcile pages through active schedules (only names, if not nil; only
// those without next_fire, if onlyNew) in batches, one transaction each.
func (s *Service) reconcile(ctx context.Context, names []string, onlyNew bool) (int, error) {
	if names != nil && len(names) == 0 {
		return 0, nil
	}
	others := map[string]int{} // schedules seen per kind this service does not run
	defer s.noteOthers(others)
	created := 0
	after := ""
	for {
		var n, got int
		err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, sqlReconcileLock, s.jobs.Schema()); err != nil {
				return err
			}
			rs, err := s.scanRows(tx.Query(ctx, s.q.active, after, names, onlyNew, batchSize))
			if err != nil {
				return err
			}
			got = len(rs)
			if got == 0 {
				return nil
			}
			after = rs[len(rs)-1].Name
			var mine []*row
			for _, r := range rs {
				switch {
				case r.spec == nil: // logged by scanRows
				case s.runs(r.Kind):
					mine = append(mine, r)
				default:
					others[r.Kind]++
				}
			}
			n, err = s.createRuns(ctx, tx, mine)
			return err
		})
		if err != nil {
			return created, fmt.Errorf("docket: reconcile schedules: %w", s.wrap(err))
		}
		created += n
		if got < batchSize {
			return created, nil
		}
	}
}

// runs reports whether the service reconciles schedules of kind: every kind
// when it is not wired to a worker, else the kinds with its hook attached.
func (s *Service) runs(kind string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kinds == nil || s.kinds[kind]
}

// noteOthers logs, once per kind and process, the kinds of active
// schedules that reconcile left to other processes.
func (s *Service) noteOthers(seen map[string]int) {
	s.mu.Lock()
	var kinds []string
	for k := range seen {
		if !s.others[k] {
			if s.others == nil {
				s.others = map[string]bool{}
			}
			s.others[k] = true
			kinds = append(kinds, k)
		}
	}
	s.mu.Unlock()
	slices.Sort(kinds)
	for _, k := range kinds {
		s.log.Info("schedules of a kind this process does not run are left to the processes that run it",
			slog.String("kind", k), slog.Int("schedules", seen[k]))
	}
}

// createRuns enqueues a pending run for each schedule whose unique key is
// free, and records its fire time; both or neither.
func (s *Service) createRuns(ctx context.Context, tx pgx.Tx, rs []*row) (int, error) {
	now := s.now()
	var items []enqueue.Item
	var planned []*row
	var fires []time.Time
	for _, r := range rs {
		fire := s.planLost(r, now)
		if fire.IsZero() {
			continue
		}
		items = append(items, r.item(fire, ""))
		planned = append(planned, r)
		fires = append(fires, fire)
	}
	if len(items) == 0 {
		return 0, nil
	}
	res, err := s.jobs.EnqueueMany(ctx, tx, items)
	if err != nil {
		return 0, err
	}
	var names []string
	var next, old []*time.Time
	for i, e := range res {
		if e.Duplicate {
			continue
		}
		names = append(names, planned[i].Name)
		next = append(next, &fires[i])
		old = append(old, planned[i].nextFire)
	}
	if len(names) == 0 {
		return 0, nil
	}
	rows, err := tx.Query(ctx, s.q.setNext, names, next, old)
	if err != nil {
		return 0, err
	}
	set, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	// A row that changed after it was read (paused, removed or advanced
	// without a successor by a transaction whose removal of the old run
	// the insert waited for) does not want the run: withdraw it.
	for _, name := range names {
		if !slices.Contains(set, name) {
			if _, _, err := s.jobs.RemoveQueued(ctx, tx, KeyPrefix+name); err != nil {
				return 0, err
			}
		}
	}
	return len(set), nil
}

// late reports whether a run for fire is past its time by more than Grace.
func (s *Service) late(r *row, fire, now time.Time) bool {
	return now.Sub(fire.Add(r.offset())) > s.grace
}

// planLost returns the fire time of a re-created run (see Reconcile), or
// zero when the spec fires no more.
func (s *Service) planLost(r *row, now time.Time) time.Time {
	var fire time.Time
	switch {
	case r.nextFire != nil:
		fire = *r.nextFire
	case r.lastFire != nil:
		fire = r.spec.Next(*r.lastFire)
	default:
		return fireTime(r.spec.Next(now))
	}
	if fire.IsZero() || !s.late(r, fire, now) || r.Misfire == CatchUp {
		return fireTime(fire)
	}
	if r.Misfire == RunOnce {
		// The latest fire time already due: one run now covers all missed.
		return fireTime(r.spec.latestUpTo(fire, now.Add(-r.offset()), 100_000))
	}
	return fireTime(r.spec.after(fire, now.Add(-r.offset())))
}

// fireTime truncates to what timestamptz stores, so that the fire time in a
// run's meta equals the schedule row's.
func fireTime(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// hook returns the outcome hook that inserts a schedule's next run in the
// transaction that completes or dead-letters its current run. It is set for
// every kind that schedules enqueue (attach). Jobs without schedule
// meta, and runs enqueued by Trigger, pass through untouched.
//
// For a run of fire time F it locks the schedule's row; unless the row
// still expects F (next_fire = F) it does nothing, so two completions of one
// fire time never insert two runs. Otherwise it computes the next fire time
// from F (not from now, so runs do not drift), or, when that is already
// due, the first fire time ahead (see successor); enqueues that run with the unique key
// schedule:<name> at fire time plus the schedule's spread offset; and
// records F as last_fire and the new time as next_fire. A paused schedule
// gets no next run.
func (s *Service) Hook() func(ctx context.Context, tx pgx.Tx, done, dead []*core.Job) error {
	return func(ctx context.Context, tx pgx.Tx, done, dead []*core.Job) error {
		for _, jobs := range [][]*core.Job{done, dead} {
			for _, j := range jobs {
				name, fire, ok := runOf(j)
				if !ok {
					continue
				}
				if err := s.advance(ctx, tx, name, fire); err != nil {
					return fmt.Errorf("schedule %q: next run: %w", name, err)
				}
			}
		}
		return nil
	}
}

// runOf returns the schedule and fire time of a scheduled run.
func runOf(j *core.Job) (string, time.Time, bool) {
	name := j.Meta[MetaSchedule]
	f := j.Meta[MetaFire]
	if name == "" || f == "" {
		return "", time.Time{}, false
	}
	fire, err := time.Parse(time.RFC3339Nano, f)
	if err != nil {
		return "", time.Time{}, false
	}
	return name, fire, true
}

func (s *Service) advance(ctx context.Context, tx pgx.Tx, name string, fire time.Time) error {
	rs, err := s.scanRows(tx.Query(ctx, s.q.lockOne, name))
	if err != nil || len(rs) == 0 {
		return err // removed: no next run
	}
	r := rs[0]
	if r.nextFire == nil || !r.nextFire.Equal(fire) {
		return nil // another run already advanced it, or the run is stale
	}
	var next *time.Time
	if !r.Paused && r.spec != nil { // an unparsable spec plans no run
		if n := s.successor(r, fire); !n.IsZero() {
			n = fireTime(n)
			it := r.item(n, "")
			res, err := s.jobs.Enqueue(ctx, tx, it.Args, it.Opts)
			if err != nil {
				return err
			}
			if res.Duplicate {
				s.log.Warn("schedule's next run already exists", slog.String("schedule", name), slog.Int64("job_id", res.ID))
			}
			next = &n
		}
	}
	_, err = tx.Exec(ctx, s.q.advance, name, fire, next)
	return err
}

// successor returns the fire time of the run that follows fire's, or zero
// when the spec fires no more. It is the next fire time unless that has
// passed already (the run ended after it, or after an outage): then, under
// Skip and RunOnce, the first fire time not yet passed, so that missed fire
// times coalesce into the run that just ended; under CatchUp the next fire
// time all the same, to run at once.
func (s *Service) successor(r *row, fire time.Time) time.Time {
	n := r.spec.Next(fire)
	if n.IsZero() || r.Misfire == CatchUp {
		return n
	}
	if now := s.now().Add(-r.offset()); n.Before(now) {
		// after is strictly after its argument: one nanosecond earlier
		// keeps a fire time at now itself, which is on time.
		n = r.spec.after(fire, now.Add(-time.Nanosecond))
	}
	return n
}

// middleware returns worker middleware that skips (completes without
// calling the handler) a schedule run whose schedule is paused or removed,
// and, under the Skip policy, a run that starts more than Grace after its
// time on its first attempt. The skipped run's completion still passes
// through the hook, which schedules the next run (none when paused or
// removed). Other jobs, retries and runs enqueued by Trigger run as usual.
// It costs one primary-key lookup per schedule run.
func (s *Service) Middleware() core.Middleware {
	return func(next core.Work) core.Work {
		return func(ctx context.Context, job *core.Job) error {
			name, fire, ok := runOf(job)
			if !ok || job.Attempt > 1 {
				return next(ctx, job)
			}
			rs, err := s.scanRows(s.db.Query(ctx, s.q.get, name))
			if err != nil {
				return fmt.Errorf("schedule %q: look up: %w", name, err)
			}
			why := ""
			switch {
			case len(rs) == 0:
				why = "removed"
			case rs[0].Paused:
				why = "paused"
			case rs[0].Misfire == Skip && s.late(rs[0], fire, s.now()):
				why = "late (misfire policy skip)"
			}
			if why == "" {
				return next(ctx, job)
			}
			s.log.Info("schedule run skipped", append(core.JobAttrs(job),
				slog.String("schedule", name), slog.String("reason", why))...)
			return nil
		}
	}
}

// Start runs Reconcile at once and then every ReconcileInterval in the
// background (not at all when it is -1), until Stop or until ctx
// ends. Errors are logged and retried at the next interval. On a started
// service it does nothing.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.interval < 0 {
		return nil
	}
	s.started = true
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop(ctx, s.stop, s.done)
	return nil
}

func (s *Service) loop(ctx context.Context, stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := s.Reconcile(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("reconciling schedules failed; retrying later", slog.String("error", err.Error()))
			}
		} else if n > 0 {
			s.log.Info("re-created pending schedule runs", slog.Int("runs", n))
		}
		t.Reset(s.interval)
	}
}

// Stop ends the loop started by Start and waits for
// it, or for ctx. Without a start, or twice, it returns nil.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	stop, done := s.stop, s.done
	if s.started {
		close(stop)
		s.started = false
	}
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Info is a schedule as stored, for listing.
type Info struct {
	Name, Spec, TimeZone, Kind, Queue, Tenant, SerialKey string
	Priority, MaxAttempts                                int
	Window                                               time.Duration
	Misfire                                              Misfire
	Paused                                               bool
	// NextFire is the fire time of the pending run; zero when none.
	NextFire time.Time
	// LastFire is the fire time of the last finished run; zero when none.
	LastFire time.Time
	// CreatedAt, UpdatedAt (definition last changed) and RegisteredAt
	// (last registered by any process).
	CreatedAt, UpdatedAt, RegisteredAt time.Time
	// Run is the queue, priority and max attempts every run gets (the
	// template's above, else the kind's registered handlers.KindOpts, else
	// the built-in defaults), as resolved at registration by a process
	// whose worker has the kind's handler. Nil when no such process has
	// registered the schedule's current template (a Service made with New
	// knows no kind's options) since migration 016.
	Run *RunOptions
}

// RunOptions are the queue, priority and max attempts of a schedule's runs.
type RunOptions struct {
	Queue       string
	Priority    int
	MaxAttempts int
}

// row is an Info with its payload and parsed spec.
type row struct {
	Info
	payload  []byte
	spec     *Spec
	nextFire *time.Time
	lastFire *time.Time
}

func (r *row) offset() time.Duration { return Offset(r.Name, r.Window) }

// item is the job of a run for fire (trigger != "" for a manual run
// without fire time or unique key).
func (r *row) item(fire time.Time, trigger string) enqueue.Item {
	opts := enqueue.Opts{
		Queue: r.Queue, Priority: r.Priority, Tenant: r.Tenant, SerialKey: r.SerialKey,
		MaxAttempts: r.MaxAttempts,
	}
	if trigger != "" {
		opts.Meta = map[string]string{MetaSchedule: r.Name, MetaTrigger: trigger}
	} else {
		opts.UniqueKey = KeyPrefix + r.Name
		opts.RunAt = fire.Add(r.offset())
		opts.Meta = map[string]string{MetaSchedule: r.Name, MetaFire: fire.UTC().Format(time.RFC3339Nano)}
	}
	return enqueue.Item{Args: rawArgs{kind: r.Kind, payload: r.payload}, Opts: opts}
}

func (s *Service) scanRows(rows pgx.Rows, err error) ([]*row, error) {
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r := &row{}
		var spreadMS int64
		var misfire string
		var runQueue *string
		var runPriority, runAttempts *int
		if err := rows.Scan(&r.Name, &r.Spec, &r.TimeZone, &r.Kind, &r.Queue, &r.Priority, &r.Tenant,
			&r.SerialKey, &r.MaxAttempts, &r.payload, &spreadMS, &misfire, &r.Paused, &r.nextFire,
			&r.lastFire, &r.CreatedAt, &r.UpdatedAt, &r.RegisteredAt,
			&runQueue, &runPriority, &runAttempts); err != nil {
			return nil, err
		}
		if runQueue != nil && runPriority != nil && runAttempts != nil {
			r.Run = &RunOptions{Queue: *runQueue, Priority: *runPriority, MaxAttempts: *runAttempts}
		}
		r.Window = time.Duration(spreadMS) * time.Millisecond
		r.Misfire = Misfire(misfire)
		if r.nextFire != nil {
			r.NextFire = r.nextFire.UTC()
		}
		if r.lastFire != nil {
			r.LastFire = r.lastFire.UTC()
		}
		spec, err := ParseSpec(r.Spec, r.TimeZone)
		if err != nil {
			// Only valid specs are written; a newer zone database might
			// differ. The row is still listed, and still counts in a page,
			// but no run of it is planned (spec stays nil).
			s.log.Error("stored schedule spec no longer parses; no run of it is planned", slog.String("schedule", r.Name), slog.String("error", err.Error()))
		}
		r.spec = spec
		out = append(out, r)
	}
	return out, s.wrap(rows.Err())
}

// wrap names the missing migration when docket_schedules (42P01), its
// schema (3F000) or a column of a later migration (42703) does not exist.
func (s *Service) wrap(err error) error {
	if err == nil {
		return nil
	}
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && (pgErr.SQLState() == "42P01" || pgErr.SQLState() == "3F000" || pgErr.SQLState() == "42703") {
		return fmt.Errorf("%w (schema %s): %w", enqueue.ErrNotMigrated, s.jobs.Schema(), err)
	}
	// Prepared statements a transaction pooler moved away: the fix.
	return pgsql.WrapPooler(err)
}

// List returns every schedule, by name.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	return s.infos(s.scanRows(s.db.Query(ctx, s.q.list)))
}

// Stale returns the schedules that no process has registered for longer
// than olderThan: candidates for Remove once their code is gone.
func (s *Service) Stale(ctx context.Context, olderThan time.Duration) ([]Info, error) {
	return s.infos(s.scanRows(s.db.Query(ctx, s.q.stale, olderThan.Milliseconds())))
}

func (s *Service) infos(rs []*row, err error) ([]Info, error) {
	out := make([]Info, len(rs))
	for i, r := range rs {
		out[i] = r.Info
	}
	return out, err
}

// Pause stops scheduling runs of the schedule until Resume and, in the same
// transaction, withdraws its pending run unless that run is already
// running. It returns an error wrapping ErrNotFound for an unknown name.
func (s *Service) Pause(ctx context.Context, name string) error {
	return s.setAndWithdraw(ctx, s.q.pause, name)
}

// Resume undoes Pause. If the pending run was skipped meanwhile, the next
// run is created at once from the last fire time, under the misfire
// policy. It returns an error wrapping ErrNotFound for an unknown name.
func (s *Service) Resume(ctx context.Context, name string) error {
	if err := s.setOne(ctx, s.db, s.q.resume, name); err != nil {
		return err
	}
	_, err := s.reconcile(ctx, []string{name}, false)
	return err
}

// Remove deletes the schedule and, in the same transaction, its pending run
// unless that run is already running (then it finishes, and no next run is
// written). It returns an error wrapping ErrNotFound for an unknown name.
func (s *Service) Remove(ctx context.Context, name string) error {
	return s.setAndWithdraw(ctx, s.q.remove, name)
}

// setAndWithdraw runs a one-schedule statement and withdraws the
// schedule's waiting run in one transaction.
func (s *Service) setAndWithdraw(ctx context.Context, sql, name string) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := s.setOne(ctx, tx, sql, name); err != nil {
			return err
		}
		_, _, err := s.jobs.RemoveQueued(ctx, tx, KeyPrefix+name)
		return s.wrap(err)
	})
}

func (s *Service) setOne(ctx context.Context, db pgsql.DB, sql, name string) error {
	tag, err := db.Exec(ctx, sql, name)
	if err != nil {
		return s.wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return nil
}

// Trigger enqueues a run of the schedule now, outside its timetable: the
// run has no fire time and no unique key, so the regular pending run is
// left as it is and the outcome hook does not advance the schedule when it
// ends.
// It runs even when the schedule is paused. It returns the job's id, or an
// error wrapping ErrNotFound for an unknown name.
//
// The run gets the options the schedule's own runs get: the template's,
// else the kind's registered ones, else the built-in defaults. A service
// whose worker has the kind's handler resolves them as its fires do; any
// other (a Service made with New, as `docket schedules trigger` and the
// dashboard use) takes them from the schedule's row (Info.Run), written by
// the registering process, or, for a row without them, from the template.
func (s *Service) Trigger(ctx context.Context, name string) (int64, error) {
	rs, err := s.scanRows(s.db.Query(ctx, s.q.get, name))
	if err != nil {
		return 0, err
	}
	if len(rs) == 0 {
		return 0, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	r := rs[0]
	it := r.item(time.Time{}, "manual")
	if _, known := s.kindDefaults(r.Kind); r.Run != nil && !known {
		it.Opts.Queue, it.Opts.Priority, it.Opts.MaxAttempts = r.Run.Queue, r.Run.Priority, r.Run.MaxAttempts
	}
	res, err := s.jobs.Enqueue(ctx, s.db, it.Args, it.Opts)
	return res.ID, err
}

// kindDefaults returns the options kind is registered with in the worker
// the service is wired to, and false when it is not wired or the worker
// does not know kind.
func (s *Service) kindDefaults(kind string) (core.KindOpts, bool) {
	s.mu.Lock()
	reg := s.reg
	s.mu.Unlock()
	if reg == nil {
		return core.KindOpts{}, false
	}
	return reg.KindOpts(kind)
}
