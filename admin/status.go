package admin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/plural"
	"github.com/docketq/docket/outbox"
	"github.com/google/uuid"
)

// The statements of Status; {{schema}} is the quoted schema.
var (
	sqlQueueStatus = pgsql.SQL(`SELECT queue, paused, ready, scheduled, running, oldest_due_at, lag_seconds,
	completed_1m, completed_1h, retries_1m, retries_1h, dead_1m, dead_1h, dlq_size, dlq_delta_24h
FROM {{schema}}.docket_queue_status ORDER BY queue`)

	sqlTableStatus = pgsql.SQL(`SELECT table_name, live_tuples, dead_tuples, last_vacuum, last_autovacuum,
	last_analyze, last_autoanalyze
FROM {{schema}}.docket_table_status ORDER BY table_name`)

	sqlStuckJobs = pgsql.SQL(`SELECT id, queue, kind, attempts, locked_by, lease_until, overdue_seconds
FROM {{schema}}.docket_stuck_jobs ORDER BY lease_until LIMIT $1`)

	sqlStuckCount = pgsql.SQL(`SELECT count(*) FROM {{schema}}.docket_stuck_jobs`)

	sqlUnserved = pgsql.SQL(`SELECT queue, kind, jobs, oldest_run_at FROM {{schema}}.docket_unserved_kinds ORDER BY queue, kind`)

	// sqlUnservedSchedules groups the schedules no live worker serves by
	// kind and queue, naming the first few.
	sqlUnservedSchedules = pgsql.SQL(`SELECT kind, queue, count(*), (array_agg(name ORDER BY name))[1:3]
FROM {{schema}}.docket_unserved_schedules
GROUP BY kind, queue ORDER BY kind, queue`)

	sqlWorkers = pgsql.SQL(`SELECT id, host, pid, kinds, queues, COALESCE(slots, 0), started_at, last_seen, expires_at > now(), claims,
	claim_p50_ms, claim_p95_ms, claim_p99_ms, COALESCE(notify_error, '')
FROM {{schema}}.docket_workers ORDER BY started_at, id`)

	sqlHorizon = pgsql.SQL(`SELECT holder, pid, application_name, state, name, database, same_database, xid_age, age_seconds
FROM {{schema}}.docket_horizon
ORDER BY age_seconds DESC NULLS LAST, xid_age DESC`)

	sqlNow = `SELECT now()`
)

// Status is a snapshot of the queue's health: what the views of migration
// 003 report (docket_queue_status, docket_table_status, docket_stuck_jobs,
// docket_unserved_kinds, docket_workers, docket_horizon) and
// docket_unserved_schedules (migration 017), and the warnings Thresholds
// draws from it. Read it with Client.Status.
type Status struct {
	// At is the database's clock when the snapshot was taken.
	At time.Time
	// Queues has one entry per queue that has live or dead jobs, history
	// in the last hour, or a row in docket_queues; sorted by name.
	Queues []QueueStatus
	// Tables are Docket's tables (history partitions included) as the
	// statistics collector sees them.
	Tables []TableStatus
	// Stuck lists up to StatusOptions.StuckLimit running jobs whose lease
	// expired; StuckCount counts them all.
	Stuck      []StuckJob
	StuckCount int64
	// Unserved lists the (queue, kind) pairs with ready jobs that no live
	// worker process claims.
	Unserved []UnservedKind
	// UnservedSchedules lists the kinds of active schedules that no live
	// worker process serves, by kind and queue.
	UnservedSchedules []UnservedSchedule
	// Workers lists the registered worker processes, live or recently gone.
	Workers []WorkerStatus
	// Horizon lists what holds back the vacuum horizon, oldest first.
	Horizon []HorizonHolder
	// Warnings are the conditions past their thresholds, most severe kinds first.
	Warnings []Warning
	// Events is the outbox relay's backlog; nil before migration 011.
	Events *outbox.EventStatus

	// caps says which counts stopped at a limit (set by Overview), so
	// that the warnings say "at least".
	caps countCaps
}

// countCaps says which counts of a snapshot are lower bounds because a
// read stopped at a limit. The zero value, Status's, means that every
// count is exact.
type countCaps struct {
	// ready: a queue's Ready of this value or more stopped there; 0 never.
	ready int64
	// dlqDelta: every queue's DLQDelta24h came from a window that stopped.
	dlqDelta bool
	// dlqSize: every queue's DLQSize came from a window that stopped.
	dlqSize bool
}

// QueueStatus is one queue's backlog, lag and throughput.
type QueueStatus struct {
	Queue  string
	Paused bool
	// Ready, Scheduled and Running count live jobs by state.
	Ready, Scheduled, Running int64
	// OldestDueAt is the run_at of the oldest job that is due and not
	// running (zero when none); Lag is its age: how long the oldest
	// waiting job has waited.
	OldestDueAt time.Time
	Lag         time.Duration
	// Completed, Retries and Dead count, over the last minute and hour,
	// jobs completed (from history), the attempts after the first spent by
	// jobs that finished or died, and jobs dead-lettered. A job that died
	// without running (cancelled while ready or waiting, or with a failed
	// workflow parent) spent no attempt and counts no retry.
	Completed1m, Completed1h int64
	Retries1m, Retries1h     int64
	Dead1m, Dead1h           int64
	// DLQSize is the number of dead jobs; DLQDelta24h is how much it grew
	// in the last 24 hours (arrivals minus replays and purges).
	DLQSize, DLQDelta24h int64
}

// TableStatus is one of Docket's tables in pg_stat_user_tables. Zero times
// mean "never".
type TableStatus struct {
	Table                        string
	LiveTuples, DeadTuples       int64
	LastVacuum, LastAutovacuum   time.Time
	LastAnalyze, LastAutoanalyze time.Time
}

// LastVacuumed is the later of the manual and automatic vacuum times.
func (t TableStatus) LastVacuumed() time.Time { return later(t.LastVacuum, t.LastAutovacuum) }

// StuckJob is a running job whose lease expired and that no reaper has
// handed back yet.
type StuckJob struct {
	ID         int64
	Queue      string
	Kind       string
	Attempts   int
	LockedBy   uuid.UUID
	LeaseUntil time.Time
	Overdue    time.Duration
}

// UnservedKind is a (queue, kind) with ready jobs that no live worker
// process has a handler for.
type UnservedKind struct {
	Queue, Kind string
	Jobs        int64
	OldestRunAt time.Time
	// AtLeast is set by Overview when it found the jobs among the head of
	// a longer queue (its first 1,000 ready jobs): Jobs is then a lower
	// bound. Status counts every ready job and never sets it.
	AtLeast bool
}

// UnservedSchedule is a kind of active schedules (paused ones are left
// out) that no live worker process serves: their runs would wait
// unclaimed. A deploy that removed the kind's handler, or a schedule
// registered by a service whose workers are down, shows up here.
type UnservedSchedule struct {
	Kind string
	// Queue is the queue the schedules name. Empty for schedules that run
	// in their kind's registered queue: for them a live worker serving the
	// kind in any queue counts.
	Queue string
	// Schedules is how many there are; Names the first three by name.
	Schedules int64
	Names     []string
}

// WorkerStatus is one registered worker process (registered by each worker process on its heartbeat).
type WorkerStatus struct {
	ID     uuid.UUID
	Host   string
	PID    int
	Kinds  []string
	Queues []string
	// Slots is how many handlers the process runs at once; zero for a
	// process of a version that does not publish it.
	Slots     int
	StartedAt time.Time
	LastSeen  time.Time
	// Live is false once the process missed its heartbeats: it died
	// without deregistering.
	Live bool
	// Claims counts the claim round trips the process made; the
	// percentiles are over its recent ones (zero when it made none).
	Claims                       int64
	ClaimP50, ClaimP95, ClaimP99 time.Duration
	// NotifyError is why the process's LISTEN connection did not hear the
	// NOTIFY it sent itself (through a transaction pooler, say): it then
	// finds jobs only on its poll interval. Empty when it did, or while the
	// check is off or has not ended.
	NotifyError string
}

// HorizonHolder is something that holds back the vacuum horizon: an open
// transaction or snapshot, a replication slot or a prepared transaction. It
// is named, never described by its query text.
type HorizonHolder struct {
	// Holder is "transaction", "replication_slot" or "prepared_transaction".
	Holder string
	// PID is the backend (or the slot's active walsender); 0 if none.
	PID int
	// Application is the backend's application_name.
	Application string
	// State is the backend's state ("idle in transaction", "active"), or
	// "active"/"inactive" for a slot, "prepared" for a prepared transaction.
	State string
	// Name is the slot name or the prepared transaction's gid.
	Name string
	// Database is the holder's database; SameDatabase is false for
	// backends of other databases, which do not hold back this one's tables.
	Database     string
	SameDatabase bool
	// XIDAge is how many transactions old the held xmin is.
	XIDAge int64
	// Age is how long the transaction has been open; AgeKnown is false when
	// PostgreSQL keeps no start time (replication slots, walsenders).
	Age      time.Duration
	AgeKnown bool
}

// Describe names the holder for a log line or warning, without query text.
func (h HorizonHolder) Describe() string {
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(h.Holder, "_", " "))
	if h.Name != "" {
		fmt.Fprintf(&b, " %q", h.Name)
	}
	if h.PID != 0 {
		fmt.Fprintf(&b, " pid %d", h.PID)
	}
	if h.Application != "" {
		fmt.Fprintf(&b, " application %q", h.Application)
	}
	if h.State != "" {
		fmt.Fprintf(&b, " (%s)", h.State)
	}
	if h.Database != "" {
		fmt.Fprintf(&b, " database %s", h.Database)
	}
	return b.String()
}

// Warning codes, one per condition Status watches.
const (
	WarnLag              = "lag"               // a queue's oldest due job waited longer than Thresholds.Lag
	WarnDLQGrowing       = "dlq_growing"       // a dead-letter queue grew in the last 24 hours
	WarnVacuumLag        = "vacuum_lag"        // a table's dead tuples are past Thresholds.DeadTuples
	WarnStuckLeases      = "stuck_leases"      // running jobs' leases expired and nobody reaps them
	WarnUnservedKind     = "unserved_kind"     // ready jobs of a kind no live process serves
	WarnUnservedSchedule = "unserved_schedule" // active schedules of a kind no live process serves
	WarnPaused           = "paused"            // a paused queue has ready jobs
	WarnHorizon          = "horizon"           // something held back the vacuum horizon too long
	WarnClaimLatency     = "claim_latency"     // a worker's claim p99 is past Thresholds.ClaimP99
	WarnNotifyLost       = "notify_lost"       // a worker's LISTEN does not hear NOTIFY: it polls
)

// Warning is one condition past its threshold.
type Warning struct {
	// Code is one of the Warn constants.
	Code string `json:"code"`
	// Subject is what it is about: a queue, table, kind, worker or holder.
	Subject string `json:"subject"`
	// Message says what is wrong in one line, with the numbers.
	Message string `json:"message"`
}

// Thresholds decide when Status warns. Zero values mean the defaults below.
type Thresholds struct {
	// Lag warns when a queue's oldest due job waited longer. Zero means 1m.
	Lag time.Duration
	// DeadTuples warns when a table has at least this many dead tuples and
	// they are at least a fifth of its live ones. Zero means 100,000.
	DeadTuples int64
	// Horizon warns when a transaction of this database has held back the
	// vacuum horizon longer. Zero means 5m.
	Horizon time.Duration
	// HorizonXIDs warns when a holder without a start time (replication
	// slot, standby feedback) holds an xmin this many transactions old.
	// Zero means 1,000,000. An inactive slot that holds an xmin always warns.
	HorizonXIDs int64
	// ClaimP99 warns when a live worker's claim p99 is above it. Zero means 250ms.
	ClaimP99 time.Duration
	// StuckLimit is how many stuck jobs Status lists. Zero means 20.
	StuckLimit int
}

func (t Thresholds) withDefaults() Thresholds {
	if t.Lag == 0 {
		t.Lag = time.Minute
	}
	if t.DeadTuples == 0 {
		t.DeadTuples = 100_000
	}
	if t.Horizon == 0 {
		t.Horizon = 5 * time.Minute
	}
	if t.HorizonXIDs == 0 {
		t.HorizonXIDs = 1_000_000
	}
	if t.ClaimP99 == 0 {
		t.ClaimP99 = 250 * time.Millisecond
	}
	if t.StuckLimit == 0 {
		t.StuckLimit = 20
	}
	return t
}

// Status reads the status views and returns the snapshot with its
// warnings. It needs the migrations up to 017; it reads, never writes.
// Every query is bounded by an index, by the size of the live table or by
// the number of schedules (see docs/operations.md). pg_stat_activity shows
// other roles' sessions only to superusers and members of pg_monitor.
func (c *Client) Status(ctx context.Context, db DB, th Thresholds) (*Status, error) {
	th = th.withDefaults()
	s := &Status{}
	if err := db.QueryRow(ctx, sqlNow).Scan(&s.At); err != nil {
		return nil, c.wrapErr(err)
	}
	err := c.each(ctx, db, sqlQueueStatus.For(c.schema), nil, func(scan func(...any) error) error {
		var q QueueStatus
		var oldest *time.Time
		var lag float64
		if err := scan(&q.Queue, &q.Paused, &q.Ready, &q.Scheduled, &q.Running, &oldest, &lag,
			&q.Completed1m, &q.Completed1h, &q.Retries1m, &q.Retries1h, &q.Dead1m, &q.Dead1h,
			&q.DLQSize, &q.DLQDelta24h); err != nil {
			return err
		}
		q.OldestDueAt, q.Lag = deref(oldest), seconds(lag)
		s.Queues = append(s.Queues, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = c.each(ctx, db, sqlUnserved.For(c.schema), nil, s.addUnserved)
	if err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, sqlStuckCount.For(c.schema)).Scan(&s.StuckCount); err != nil {
		return nil, c.wrapErr(err)
	}
	err = c.each(ctx, db, sqlStuckJobs.For(c.schema), []any{th.StuckLimit}, func(scan func(...any) error) error {
		var j StuckJob
		var overdue float64
		if err := scan(&j.ID, &j.Queue, &j.Kind, &j.Attempts, &j.LockedBy, &j.LeaseUntil, &overdue); err != nil {
			return err
		}
		j.Overdue = seconds(overdue)
		s.Stuck = append(s.Stuck, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.readRest(ctx, db, th, s); err != nil {
		return nil, err
	}
	return s, nil
}

// addUnserved reads one row of unserved kinds (queue, kind, jobs, oldest
// run_at) into s.
func (s *Status) addUnserved(scan func(...any) error) error {
	var u UnservedKind
	if err := scan(&u.Queue, &u.Kind, &u.Jobs, &u.OldestRunAt); err != nil {
		return err
	}
	s.Unserved = append(s.Unserved, u)
	return nil
}

// readRest reads what Status and Overview share, each part bounded by an
// index or by the small table it reads — tables, workers, schedules no
// worker serves, the vacuum horizon, the relay's backlog — and sets the
// warnings.
func (c *Client) readRest(ctx context.Context, db DB, th Thresholds, s *Status) error {
	var err error
	err = c.each(ctx, db, sqlUnservedSchedules.For(c.schema), nil, func(scan func(...any) error) error {
		var u UnservedSchedule
		if err := scan(&u.Kind, &u.Queue, &u.Schedules, &u.Names); err != nil {
			return err
		}
		s.UnservedSchedules = append(s.UnservedSchedules, u)
		return nil
	})
	if err != nil {
		return err
	}
	err = c.each(ctx, db, sqlTableStatus.For(c.schema), nil, func(scan func(...any) error) error {
		var t TableStatus
		var v, av, a, aa *time.Time
		if err := scan(&t.Table, &t.LiveTuples, &t.DeadTuples, &v, &av, &a, &aa); err != nil {
			return err
		}
		t.LastVacuum, t.LastAutovacuum, t.LastAnalyze, t.LastAutoanalyze = deref(v), deref(av), deref(a), deref(aa)
		s.Tables = append(s.Tables, t)
		return nil
	})
	if err != nil {
		return err
	}
	if s.Workers, err = c.Workers(ctx, db); err != nil {
		return err
	}
	err = c.each(ctx, db, sqlHorizon.For(c.schema), nil, func(scan func(...any) error) error {
		var h HorizonHolder
		var pid *int32
		var app, state, name, dbname *string
		var age *float64
		var xid *int64
		if err := scan(&h.Holder, &pid, &app, &state, &name, &dbname, &h.SameDatabase, &xid, &age); err != nil {
			return err
		}
		if pid != nil {
			h.PID = int(*pid)
		}
		h.Application, h.State, h.Name, h.Database = str(app), str(state), str(name), str(dbname)
		if xid != nil {
			h.XIDAge = *xid
		}
		if age != nil {
			h.Age, h.AgeKnown = seconds(*age), true
		}
		s.Horizon = append(s.Horizon, h)
		return nil
	})
	if err != nil {
		return err
	}
	if s.Events, err = c.eventStatusIfMigrated(ctx, db); err != nil {
		return err
	}
	s.Warnings = s.check(th)
	return nil
}

// Workers lists the registered worker processes, live or recently gone,
// from the presence table alone.
func (c *Client) Workers(ctx context.Context, db DB) ([]WorkerStatus, error) {
	var out []WorkerStatus
	err := c.each(ctx, db, sqlWorkers.For(c.schema), nil, func(scan func(...any) error) error {
		var w WorkerStatus
		var p50, p95, p99 *float64
		if err := scan(&w.ID, &w.Host, &w.PID, &w.Kinds, &w.Queues, &w.Slots, &w.StartedAt, &w.LastSeen, &w.Live,
			&w.Claims, &p50, &p95, &p99, &w.NotifyError); err != nil {
			return err
		}
		w.ClaimP50, w.ClaimP95, w.ClaimP99 = millis(p50), millis(p95), millis(p99)
		out = append(out, w)
		return nil
	})
	return out, err
}

// eventStatusIfMigrated returns the relay's backlog, or nil before
// migration 011 (asked with a statement that cannot fail, so a caller's
// transaction is never aborted).
func (c *Client) eventStatusIfMigrated(ctx context.Context, db DB) (*outbox.EventStatus, error) {
	var ok bool
	if err := db.QueryRow(ctx, pgsql.TableExists, `"`+c.schema+`".docket_event_status`).Scan(&ok); err != nil || !ok {
		return nil, c.wrapErr(err)
	}
	ev, err := c.events.EventStatus(ctx, db)
	if err != nil {
		return nil, err
	}
	return &ev, nil
}

// OldestHorizon returns the holder of this database's vacuum horizon that
// has been open longest (by time where known), and false when there is none.
func (s *Status) OldestHorizon() (HorizonHolder, bool) {
	for _, h := range s.Horizon { // sorted by age, then xid age
		if h.SameDatabase {
			return h, true
		}
	}
	return HorizonHolder{}, false
}

// check draws the warnings from a snapshot. Counts read to a limit (see
// countCaps) say "at least".
func (s *Status) check(th Thresholds) []Warning {
	var out []Warning
	add := func(code, subject, format string, args ...any) {
		out = append(out, Warning{Code: code, Subject: subject, Message: fmt.Sprintf(format, args...)})
	}
	readyJobs := func(n int64) string {
		if s.caps.ready > 0 && n >= s.caps.ready {
			return plural.AtLeast(n, "ready job", "ready jobs")
		}
		return plural.Count(n, "ready job", "ready jobs")
	}
	for _, q := range s.Queues {
		if q.Paused && q.Ready > 0 {
			add(WarnPaused, q.Queue, "queue %s is paused with %s (lag %s)", q.Queue, readyJobs(q.Ready), round(q.Lag))
		} else if q.Lag > th.Lag {
			add(WarnLag, q.Queue, "queue %s: oldest due job has waited %s (threshold %s), %s", q.Queue, round(q.Lag), th.Lag, readyJobs(q.Ready))
		}
		if q.DLQDelta24h > 0 {
			grew := plural.Number(q.DLQDelta24h)
			if s.caps.dlqDelta {
				grew = "at least " + grew
			}
			size := plural.Number(q.DLQSize)
			if s.caps.dlqSize {
				size = "at least " + size
			}
			if q.DLQSize > 0 {
				add(WarnDLQGrowing, q.Queue, "queue %s: dead-letter queue grew by %s in 24h to %s", q.Queue, grew, size)
			} else {
				add(WarnDLQGrowing, q.Queue, "queue %s: dead-letter queue grew by %s in 24h", q.Queue, grew)
			}
		}
	}
	if s.StuckCount > 0 {
		oldest := time.Duration(0)
		if len(s.Stuck) > 0 {
			oldest = s.Stuck[0].Overdue
		}
		add(WarnStuckLeases, "docket_jobs", "%s %s (oldest overdue %s): no reaper runs — are any workers up?",
			plural.Count(s.StuckCount, "running job", "running jobs"), plural.Noun(s.StuckCount, "has an expired lease", "have expired leases"), round(oldest))
	}
	for _, u := range s.Unserved {
		count := plural.Count
		if u.AtLeast {
			count = plural.AtLeast
		}
		jobs := count(u.Jobs, "ready "+u.Kind+" job", "ready "+u.Kind+" jobs")
		add(WarnUnservedKind, u.Queue+"/"+u.Kind, "%s in queue %s and no live worker serves %s", jobs, u.Queue, plural.Noun(u.Jobs, "it", "them"))
	}
	for _, u := range s.UnservedSchedules {
		subject, served := u.Kind, "kind "+u.Kind
		if u.Queue != "" {
			subject, served = u.Queue+"/"+u.Kind, "kind "+u.Kind+" in queue "+u.Queue
		}
		if u.Schedules == 1 && len(u.Names) == 1 {
			add(WarnUnservedSchedule, subject, "schedule %s: no live worker serves %s; its runs will wait unclaimed", u.Names[0], served)
			continue
		}
		names := strings.Join(u.Names, ", ")
		if more := u.Schedules - int64(len(u.Names)); more > 0 {
			names += " and " + plural.Number(more) + " more"
		}
		add(WarnUnservedSchedule, subject, "%s (%s): no live worker serves %s; their runs will wait unclaimed",
			plural.Count(u.Schedules, "schedule", "schedules"), names, served)
	}
	for _, t := range s.Tables {
		if t.DeadTuples >= th.DeadTuples && t.DeadTuples*5 >= t.LiveTuples {
			last := "never"
			if v := t.LastVacuumed(); !v.IsZero() {
				last = round(s.At.Sub(v)).String() + " ago"
			}
			add(WarnVacuumLag, t.Table, "table %s has %s (%s live); last vacuum %s", t.Table,
				plural.Count(t.DeadTuples, "dead tuple", "dead tuples"), plural.Number(t.LiveTuples), last)
		}
	}
	for _, h := range s.Horizon {
		if !h.SameDatabase {
			continue
		}
		xids := plural.Count(h.XIDAge, "transaction", "transactions")
		switch {
		case h.AgeKnown && h.Age > th.Horizon:
			add(WarnHorizon, h.Describe(), "%s has held the vacuum horizon for %s (%s): dead tuples cannot be removed until it ends", h.Describe(), round(h.Age), xids)
		case !h.AgeKnown && h.Holder == "replication_slot" && h.State == "inactive":
			add(WarnHorizon, h.Describe(), "inactive %s holds an xmin %s old: dead tuples cannot be removed until it is consumed or dropped", h.Describe(), xids)
		case !h.AgeKnown && h.XIDAge > th.HorizonXIDs:
			add(WarnHorizon, h.Describe(), "%s holds an xmin %s old (threshold %s)", h.Describe(), xids, plural.Number(th.HorizonXIDs))
		}
	}
	for _, w := range s.Workers {
		if w.Live && w.ClaimP99 > th.ClaimP99 {
			add(WarnClaimLatency, w.ID.String(), "worker %s on %s pid %d: claim p99 %s (threshold %s): check dead tuples and the vacuum horizon", w.ID, w.Host, w.PID, w.ClaimP99.Round(time.Microsecond), th.ClaimP99)
		}
		if w.Live && w.NotifyError != "" {
			add(WarnNotifyLost, w.ID.String(), "worker %s on %s pid %d: its LISTEN connection does not hear NOTIFY, so it finds jobs only by polling: give it a ListenURL straight to PostgreSQL (docs/compatibility.md#pgbouncer)", w.ID, w.Host, w.PID)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return severity[out[i].Code] < severity[out[j].Code] })
	return out
}

// warningCodes are the Warn constants, most severe first: Status lists its
// warnings in this order.
var warningCodes = []string{WarnStuckLeases, WarnUnservedKind, WarnUnservedSchedule, WarnLag, WarnHorizon,
	WarnVacuumLag, WarnClaimLatency, WarnNotifyLost, WarnDLQGrowing, WarnPaused}

var severity = func() map[string]int {
	m := make(map[string]int, len(warningCodes))
	for i, c := range warningCodes {
		m[c] = i
	}
	return m
}()

// WarningCodes returns every warning code Status may report, most severe
// first, e.g. to export a gauge per code that is zero while all is well.
func WarningCodes() []string { return slices.Clone(warningCodes) }

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func millis(f *float64) time.Duration {
	if f == nil {
		return 0
	}
	return time.Duration(*f * float64(time.Millisecond))
}

func round(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
