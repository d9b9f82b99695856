package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/google/uuid"
)

// writeJSON prints v as one JSON document in the CLI's convention, whatever
// package its type comes from: snake_case keys (a json tag wins), times in
// RFC 3339 UTC, durations as seconds, [] for a nil slice, {} for a nil map,
// and zero times, nil pointers, empty raw JSON and zero fields tagged
// omitempty or omitzero left out. indent spreads it over lines for a
// reader; without it, it is one line (for a stream).
func writeJSON(out io.Writer, v any, indent bool) error {
	val, _ := jsonValue(reflect.ValueOf(v))
	enc := json.NewEncoder(out)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(val)
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	durationType  = reflect.TypeFor[time.Duration]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonValue converts v to what encoding/json prints in the convention, and
// whether it is present at all (false: leave the field out).
func jsonValue(v reflect.Value) (any, bool) {
	if !v.IsValid() {
		return nil, false
	}
	switch t := v.Type(); {
	case t == timeType:
		at := v.Interface().(time.Time)
		if at.IsZero() {
			return nil, false
		}
		return at.UTC().Format(time.RFC3339Nano), true
	case t == durationType:
		return time.Duration(v.Int()).Seconds(), true
	case t == rawType:
		if v.Len() == 0 {
			return nil, false
		}
		return v.Interface(), true
	case v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface &&
		(t.Implements(marshalerType) || t.Implements(textType)):
		return v.Interface(), true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, false
		}
		return jsonValue(v.Elem())
	case reflect.Struct:
		var obj object
		obj.addFields(v)
		return obj, true
	case reflect.Slice, reflect.Array:
		list := make([]any, 0, v.Len())
		for i := range v.Len() {
			e, _ := jsonValue(v.Index(i))
			list = append(list, e)
		}
		return list, true
	case reflect.Map:
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			if e, ok := jsonValue(it.Value()); ok {
				m[fmt.Sprint(it.Key().Interface())] = e
			}
		}
		return m, true
	}
	return v.Interface(), true
}

// object is a JSON object that keeps its fields in the struct's order.
type object []field

type field struct {
	key   string
	value any
}

// addFields adds a struct's exported fields; an embedded struct's fields
// join the outer object, exported or not, as encoding/json does.
func (o *object) addFields(v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && name == "" && fv.Kind() == reflect.Struct {
			o.addFields(fv)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if (strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")) && fv.IsZero() {
			continue
		}
		if name == "" {
			name = snakeCase(f.Name)
		}
		if val, ok := jsonValue(fv); ok {
			*o = append(*o, field{name, val})
		}
	}
}

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.key)
		val, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// snakeCase turns a Go field name into a JSON key: OldestDueAt is
// oldest_due_at, DLQSize dlq_size, ClaimP99 claim_p99, XIDAge xid_age.
func snakeCase(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			acronymEnd := unicode.IsUpper(r[i-1]) && i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || acronymEnd {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// The objects of --json, one struct each, used by every command that
// prints the object (docs/cli-json.md lists them). Keys are spelled out in
// tags. A detail command may add keys to an object only by embedding it
// (jobs show: the job and "payload"); a list inside another object uses
// the object, or a short form whose keys are the object's (a workflow's
// jobs). The keys tagged omitzero or omitempty are optional, left out when
// absent; every other key is always there.

// jobJSON is a job, live, finished or dead: jobs list and show, dlq list
// and show.
type jobJSON struct {
	ID          int64             `json:"id"`
	State       string            `json:"state"`
	Queue       string            `json:"queue"`
	Kind        string            `json:"kind"`
	Priority    int               `json:"priority"`
	Tenant      string            `json:"tenant"`
	SerialKey   string            `json:"serial_key"`
	UniqueKey   string            `json:"unique_key"`
	Attempts    int               `json:"attempts"`
	MaxAttempts int               `json:"max_attempts"`
	CreatedAt   time.Time         `json:"created_at"`
	RunAt       time.Time         `json:"run_at"`
	StartedAt   time.Time         `json:"started_at,omitzero"`  // once an attempt started
	LeaseUntil  time.Time         `json:"lease_until,omitzero"` // while running
	FinishedAt  time.Time         `json:"finished_at,omitzero"` // once completed or dead
	Reason      string            `json:"reason"`               // why a dead job died
	LastError   string            `json:"last_error"`
	Meta        map[string]string `json:"meta"`
	// The worker process running the job, while it runs.
	LockedBy   uuid.UUID `json:"locked_by,omitempty"`
	WorkerHost string    `json:"worker_host,omitempty"`
	WorkerPID  int       `json:"worker_pid,omitempty"`
	// The progress its handler reported last (running or dead jobs).
	Progress *progressJSON `json:"progress,omitempty"`
	// When an operator asked to cancel the running job.
	CancelRequestedAt time.Time `json:"cancel_requested_at,omitzero"`
}

// progressJSON is a job's last reported progress.
type progressJSON struct {
	Value   json.RawMessage `json:"value,omitempty"`
	Message string          `json:"message,omitempty"`
	At      time.Time       `json:"at"`
}

func progressFrom(p *admin.Progress) *progressJSON {
	if p == nil {
		return nil
	}
	return &progressJSON{Value: p.Value, Message: p.Message, At: p.At}
}

// jobDetailJSON is jobs show and dlq show: the job, its payload when
// --payload asked for it, and its runs, oldest first, once it has run.
type jobDetailJSON struct {
	jobJSON
	Payload json.RawMessage `json:"payload,omitzero"`
	// Result is what the handler recorded (jobs show --payload).
	Result         json.RawMessage `json:"result,omitzero"`
	AttemptHistory []attemptJSON   `json:"attempt_history,omitempty"`
}

// attemptJSON is one run of a job (admin.Attempt): jobs show and dlq show.
type attemptJSON struct {
	Attempt    int       `json:"attempt"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"` // once it ended
	Worker     uuid.UUID `json:"worker,omitzero"`
	WorkerHost string    `json:"worker_host,omitempty"`
	WorkerPID  int       `json:"worker_pid,omitempty"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
}

func attemptsFrom(list []admin.Attempt) []attemptJSON {
	out := make([]attemptJSON, len(list))
	for i, a := range list {
		out[i] = attemptJSON{Attempt: a.Attempt, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, Worker: a.Worker,
			WorkerHost: a.WorkerHost, WorkerPID: a.WorkerPID, Outcome: a.Outcome, Error: a.Error}
	}
	return out
}

// jobPageJSON is jobs list: a page of jobs, and the --after of the next
// page (0 on the last).
type jobPageJSON struct {
	Jobs []jobJSON `json:"jobs"`
	Next int64     `json:"next"`
}

func jobFromInfo(j admin.JobInfo) jobDetailJSON {
	return jobDetailJSON{jobJSON: jobJSON{
		ID: j.ID, State: j.State, Queue: j.Queue, Kind: j.Kind, Priority: j.Priority, Tenant: j.Tenant,
		SerialKey: j.SerialKey, UniqueKey: j.UniqueKey, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt, RunAt: j.RunAt, StartedAt: j.StartedAt, LeaseUntil: j.LeaseUntil, FinishedAt: j.FinishedAt,
		Reason: j.Reason, LastError: j.LastError, Meta: j.Meta,
		LockedBy: j.LockedBy, WorkerHost: j.WorkerHost, WorkerPID: j.WorkerPID,
		Progress: progressFrom(j.Progress), CancelRequestedAt: j.CancelRequestedAt,
	}, Payload: j.Payload, Result: j.Result}
}

func jobFromDead(d admin.DeadJob) jobDetailJSON {
	return jobDetailJSON{jobJSON: jobJSON{
		ID: d.ID, State: admin.StateDead, Queue: d.Queue, Kind: d.Kind, Priority: d.Priority, Tenant: d.Tenant,
		SerialKey: d.SerialKey, UniqueKey: d.UniqueKey, Attempts: d.Attempts, MaxAttempts: d.MaxAttempts,
		CreatedAt: d.CreatedAt, RunAt: d.RunAt, FinishedAt: d.DeadAt,
		Reason: d.Reason, LastError: d.LastError, Meta: d.Meta,
	}, Payload: d.Payload}
}

func jobPageFrom(p admin.JobPage) jobPageJSON {
	out := jobPageJSON{Jobs: make([]jobJSON, len(p.Jobs)), Next: p.Next}
	for i, j := range p.Jobs {
		out.Jobs[i] = jobFromInfo(j).jobJSON
	}
	return out
}

func deadJobsFrom(list []admin.DeadJob) []jobJSON {
	out := make([]jobJSON, len(list))
	for i, d := range list {
		out[i] = jobFromDead(d).jobJSON
	}
	return out
}

// queueJSON is a queue: queues list.
type queueJSON struct {
	Queue  string `json:"queue"`
	Paused bool   `json:"paused"`
}

// queueStatusJSON is a queue in status: the queue and its backlog, lag
// and throughput, named as in the docket_queue_status view.
type queueStatusJSON struct {
	queueJSON
	Ready       int64         `json:"ready"`
	Scheduled   int64         `json:"scheduled"`
	Running     int64         `json:"running"`
	OldestDueAt time.Time     `json:"oldest_due_at,omitzero"` // while a due job waits
	Lag         time.Duration `json:"lag"`
	Completed1m int64         `json:"completed_1m"`
	Completed1h int64         `json:"completed_1h"`
	Retries1m   int64         `json:"retries_1m"`
	Retries1h   int64         `json:"retries_1h"`
	Dead1m      int64         `json:"dead_1m"`
	Dead1h      int64         `json:"dead_1h"`
	DLQSize     int64         `json:"dlq_size"`
	DLQDelta24h int64         `json:"dlq_delta_24h"`
}

// workerJSON is a registered worker process: status.
type workerJSON struct {
	ID        uuid.UUID     `json:"id"`
	Host      string        `json:"host"`
	PID       int           `json:"pid"`
	Kinds     []string      `json:"kinds"`
	Queues    []string      `json:"queues"`
	Slots     int           `json:"slots"`
	StartedAt time.Time     `json:"started_at"`
	LastSeen  time.Time     `json:"last_seen"`
	Live      bool          `json:"live"`
	Claims    int64         `json:"claims"`
	ClaimP50  time.Duration `json:"claim_p50"`
	ClaimP95  time.Duration `json:"claim_p95"`
	ClaimP99  time.Duration `json:"claim_p99"`
	// NotifyError: its LISTEN does not hear NOTIFY, so it only polls.
	NotifyError string `json:"notify_error,omitzero"`
}

// tableJSON is one of Docket's tables as the statistics collector sees
// it: status. The times are left out while never.
type tableJSON struct {
	Table           string    `json:"table"`
	LiveTuples      int64     `json:"live_tuples"`
	DeadTuples      int64     `json:"dead_tuples"`
	LastVacuum      time.Time `json:"last_vacuum,omitzero"`
	LastAutovacuum  time.Time `json:"last_autovacuum,omitzero"`
	LastAnalyze     time.Time `json:"last_analyze,omitzero"`
	LastAutoanalyze time.Time `json:"last_autoanalyze,omitzero"`
}

// stuckJobJSON is a running job whose lease expired (status), in the
// job's keys and how long ago the lease ended.
type stuckJobJSON struct {
	ID         int64         `json:"id"`
	Queue      string        `json:"queue"`
	Kind       string        `json:"kind"`
	Attempts   int           `json:"attempts"`
	LockedBy   uuid.UUID     `json:"locked_by"`
	LeaseUntil time.Time     `json:"lease_until"`
	Overdue    time.Duration `json:"overdue"`
}

// unservedJSON is a queue and kind with ready jobs no live worker serves:
// status.
type unservedJSON struct {
	Queue       string    `json:"queue"`
	Kind        string    `json:"kind"`
	Jobs        int64     `json:"jobs"`
	OldestRunAt time.Time `json:"oldest_run_at"`
	AtLeast     bool      `json:"at_least,omitzero"` // jobs is a lower bound
}

// unservedScheduleJSON is a kind of active schedules no live worker
// serves: status.
type unservedScheduleJSON struct {
	Kind      string   `json:"kind"`
	Queue     string   `json:"queue"` // empty: the kind's registered queue
	Schedules int64    `json:"schedules"`
	Names     []string `json:"names"` // the first three, by name
}

// horizonJSON is what holds back the vacuum horizon: status.
type horizonJSON struct {
	Holder       string        `json:"holder"`
	PID          int           `json:"pid"`
	Application  string        `json:"application"`
	State        string        `json:"state"`
	Name         string        `json:"name"`
	Database     string        `json:"database"`
	SameDatabase bool          `json:"same_database"`
	XIDAge       int64         `json:"xid_age"`
	Age          time.Duration `json:"age"`
	AgeKnown     bool          `json:"age_known"`
}

// warningJSON is a condition past its threshold: status.
type warningJSON struct {
	Code    string `json:"code"`
	Subject string `json:"subject"`
	Message string `json:"message"`
}

// eventStatusJSON is the outbox relay's backlog: relay status, and status
// (events).
type eventStatusJSON struct {
	Pending       int64         `json:"pending"`
	OldestPending time.Time     `json:"oldest_pending,omitzero"` // while events are pending
	Lag           time.Duration `json:"lag"`
	Dead          int64         `json:"dead"`
	BlockedKeys   int64         `json:"blocked_keys"`
	Relays        int64         `json:"relays"`
}

// statusJSON is status: one snapshot. events is left out before the
// relay's tables exist.
type statusJSON struct {
	At         time.Time         `json:"at"`
	Queues     []queueStatusJSON `json:"queues"`
	Tables     []tableJSON       `json:"tables"`
	Stuck      []stuckJobJSON    `json:"stuck"`
	StuckCount int64             `json:"stuck_count"`
	Unserved   []unservedJSON    `json:"unserved"`
	// UnservedSchedules are the active schedules no live worker serves.
	UnservedSchedules []unservedScheduleJSON `json:"unserved_schedules"`
	Workers           []workerJSON           `json:"workers"`
	Horizon           []horizonJSON          `json:"horizon"`
	Warnings          []warningJSON          `json:"warnings"`
	Events            *eventStatusJSON       `json:"events,omitzero"`
}

func eventStatusFrom(e outbox.EventStatus) eventStatusJSON {
	return eventStatusJSON{Pending: e.Pending, OldestPending: e.OldestPending, Lag: e.Lag,
		Dead: e.Dead, BlockedKeys: e.BlockedKeys, Relays: e.Relays}
}

func statusFrom(s *admin.Status) statusJSON {
	out := statusJSON{At: s.At, StuckCount: s.StuckCount}
	for _, q := range s.Queues {
		out.Queues = append(out.Queues, queueStatusJSON{queueJSON: queueJSON{Queue: q.Queue, Paused: q.Paused},
			Ready: q.Ready, Scheduled: q.Scheduled, Running: q.Running, OldestDueAt: q.OldestDueAt, Lag: q.Lag,
			Completed1m: q.Completed1m, Completed1h: q.Completed1h, Retries1m: q.Retries1m, Retries1h: q.Retries1h,
			Dead1m: q.Dead1m, Dead1h: q.Dead1h, DLQSize: q.DLQSize, DLQDelta24h: q.DLQDelta24h})
	}
	for _, t := range s.Tables {
		out.Tables = append(out.Tables, tableJSON{Table: t.Table, LiveTuples: t.LiveTuples, DeadTuples: t.DeadTuples,
			LastVacuum: t.LastVacuum, LastAutovacuum: t.LastAutovacuum, LastAnalyze: t.LastAnalyze, LastAutoanalyze: t.LastAutoanalyze})
	}
	for _, j := range s.Stuck {
		out.Stuck = append(out.Stuck, stuckJobJSON{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Attempts: j.Attempts,
			LockedBy: j.LockedBy, LeaseUntil: j.LeaseUntil, Overdue: j.Overdue})
	}
	for _, u := range s.Unserved {
		out.Unserved = append(out.Unserved, unservedJSON{Queue: u.Queue, Kind: u.Kind, Jobs: u.Jobs, OldestRunAt: u.OldestRunAt, AtLeast: u.AtLeast})
	}
	for _, u := range s.UnservedSchedules {
		out.UnservedSchedules = append(out.UnservedSchedules, unservedScheduleJSON{Kind: u.Kind, Queue: u.Queue, Schedules: u.Schedules, Names: u.Names})
	}
	for _, w := range s.Workers {
		out.Workers = append(out.Workers, workerJSON{ID: w.ID, Host: w.Host, PID: w.PID, Kinds: w.Kinds, Queues: w.Queues,
			Slots: w.Slots, StartedAt: w.StartedAt, LastSeen: w.LastSeen, Live: w.Live,
			Claims: w.Claims, ClaimP50: w.ClaimP50, ClaimP95: w.ClaimP95, ClaimP99: w.ClaimP99, NotifyError: w.NotifyError})
	}
	for _, h := range s.Horizon {
		out.Horizon = append(out.Horizon, horizonJSON{Holder: h.Holder, PID: h.PID, Application: h.Application,
			State: h.State, Name: h.Name, Database: h.Database, SameDatabase: h.SameDatabase,
			XIDAge: h.XIDAge, Age: h.Age, AgeKnown: h.AgeKnown})
	}
	for _, w := range s.Warnings {
		out.Warnings = append(out.Warnings, warningJSON{Code: w.Code, Subject: w.Subject, Message: w.Message})
	}
	if s.Events != nil {
		e := eventStatusFrom(*s.Events)
		out.Events = &e
	}
	return out
}

// scheduleJSON is a recurring schedule: schedules list.
type scheduleJSON struct {
	Name         string        `json:"name"`
	Spec         string        `json:"spec"`
	TimeZone     string        `json:"time_zone"`
	Kind         string        `json:"kind"`
	Queue        string        `json:"queue"` // empty: the kind's queue
	Tenant       string        `json:"tenant"`
	SerialKey    string        `json:"serial_key"`
	Priority     int           `json:"priority"`
	MaxAttempts  int           `json:"max_attempts"` // 0: the kind's
	Window       time.Duration `json:"window"`
	Misfire      string        `json:"misfire"`
	Paused       bool          `json:"paused"`
	NextFire     time.Time     `json:"next_fire,omitzero"` // while a run is pending
	LastFire     time.Time     `json:"last_fire,omitzero"` // once a run finished
	CreatedAt    time.Time     `json:"created_at"`
	UpdatedAt    time.Time     `json:"updated_at"`
	RegisteredAt time.Time     `json:"registered_at"`
	// Run is what the schedule's runs get, as the process that registered
	// it resolved them; absent until a process with the kind's handler
	// registered it.
	Run *runOptionsJSON `json:"run,omitzero"`
}

// runOptionsJSON is the queue, priority and attempts a schedule's runs get:
// schedules list (run).
type runOptionsJSON struct {
	Queue       string `json:"queue"`
	Priority    int    `json:"priority"`
	MaxAttempts int    `json:"max_attempts"`
}

func schedulesFrom(list []admin.ScheduleInfo) []scheduleJSON {
	out := make([]scheduleJSON, len(list))
	for i, s := range list {
		out[i] = scheduleJSON{Name: s.Name, Spec: s.Spec, TimeZone: s.TimeZone, Kind: s.Kind, Queue: s.Queue,
			Tenant: s.Tenant, SerialKey: s.SerialKey, Priority: s.Priority, MaxAttempts: s.MaxAttempts,
			Window: s.Window, Misfire: string(s.Misfire), Paused: s.Paused, NextFire: s.NextFire, LastFire: s.LastFire,
			CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, RegisteredAt: s.RegisteredAt}
		if r := s.Run; r != nil {
			out[i].Run = &runOptionsJSON{Queue: r.Queue, Priority: r.Priority, MaxAttempts: r.MaxAttempts}
		}
	}
	return out
}

// workflowJSON is a workflow: workflows list and show. jobs counts them
// all, remaining those still live, failed those dead.
type workflowJSON struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	State       string    `json:"state"`
	Jobs        int       `json:"jobs"`
	Remaining   int       `json:"remaining"`
	Failed      int       `json:"failed"`
	CreatedAt   time.Time `json:"created_at"`
	CancelledAt time.Time `json:"cancelled_at,omitzero"` // once cancelled
	// A child workflow: the job waiting for it, that job's workflow (none
	// for a job outside workflows) and its depth.
	ParentJobID      int64 `json:"parent_job_id,omitempty"`
	ParentWorkflowID int64 `json:"parent_workflow_id,omitempty"`
	Depth            int   `json:"depth,omitempty"`
}

// workflowJobJSON is a workflow's live or dead job in short form: the
// job's own keys, without the rest (jobs show ID has them).
type workflowJobJSON struct {
	ID        int64  `json:"id"`
	State     string `json:"state"`
	Queue     string `json:"queue"`
	Kind      string `json:"kind"`
	Reason    string `json:"reason"`
	LastError string `json:"last_error"`
	// A waiting step's signal and its deadline, once its parents completed.
	WaitFor   string    `json:"wait_for,omitempty"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
	// The child workflow the job started (waiting: waits for), if any.
	ChildWorkflowID int64 `json:"child_workflow_id,omitempty"`
}

// workflowDetailJSON is workflows show: the workflow and its jobs still
// live or dead (completed ones are in history).
type workflowDetailJSON struct {
	workflowJSON
	LiveOrDeadJobs []workflowJobJSON `json:"live_or_dead_jobs"`
}

func workflowFrom(w admin.WorkflowState) workflowJSON {
	return workflowJSON{ID: w.ID, Name: w.Name, State: w.State, Jobs: w.Jobs, Remaining: w.Remaining,
		Failed: w.Failed, CreatedAt: w.CreatedAt, CancelledAt: w.CancelledAt,
		ParentJobID: w.ParentJobID, ParentWorkflowID: w.ParentWorkflowID, Depth: w.Depth}
}

func workflowsFrom(list []admin.WorkflowState) []workflowJSON {
	out := make([]workflowJSON, len(list))
	for i, w := range list {
		out[i] = workflowFrom(w)
	}
	return out
}

func workflowDetailFrom(w admin.WorkflowState, jobs []admin.WorkflowJobState) workflowDetailJSON {
	out := workflowDetailJSON{workflowFrom(w), make([]workflowJobJSON, len(jobs))}
	for i, j := range jobs {
		out.LiveOrDeadJobs[i] = workflowJobJSON{ID: j.ID, State: j.State, Queue: j.Queue, Kind: j.Kind,
			Reason: j.Reason, LastError: j.LastError, WaitFor: j.WaitFor, WaitUntil: j.WaitUntil, ChildWorkflowID: j.ChildWorkflowID}
	}
	return out
}

// limitJSON is a flow-control limit. Queue and kind are empty for a limit
// on every job; rate, per and burst are 0 without a rate limit.
type limitJSON struct {
	Name       string        `json:"name"`
	Queue      string        `json:"queue"`
	Kind       string        `json:"kind"`
	PerTenant  bool          `json:"per_tenant"`
	MaxRunning int           `json:"max_running"`
	Rate       int           `json:"rate"`
	Per        time.Duration `json:"per"`
	Burst      int           `json:"burst"`
}

// limitKeyJSON is one key of a limit in use (a tenant, or "" for the
// whole limit): its running jobs and, with a rate, the tokens its bucket
// held when a claim last looked and the tokens it holds now (refilled at
// the limit's rate since, up to the burst).
type limitKeyJSON struct {
	Tenant    string   `json:"tenant"`
	Running   int      `json:"running"`
	Tokens    *float64 `json:"tokens,omitzero"`
	TokensNow *float64 `json:"tokens_now,omitzero"`
}

// limitUsageJSON is limits list: the limit and its keys in use.
type limitUsageJSON struct {
	limitJSON
	Keys []limitKeyJSON `json:"keys"`
}

func limitFrom(l admin.Limit, usage []admin.LimitUsage) limitUsageJSON {
	out := limitUsageJSON{limitJSON{Name: l.Name, Queue: l.Queue, Kind: l.Kind, PerTenant: l.PerTenant,
		MaxRunning: l.MaxRunning, Rate: l.Rate, Per: l.Per, Burst: l.Burst}, []limitKeyJSON{}}
	for _, u := range usage {
		if u.Limit != l.Name {
			continue
		}
		k := limitKeyJSON{Tenant: u.Tenant, Running: u.Running}
		if u.Tokens >= 0 {
			k.Tokens = &u.Tokens
		}
		if u.TokensNow >= 0 {
			k.TokensNow = &u.TokensNow
		}
		out.Keys = append(out.Keys, k)
	}
	return out
}

// migrationJSON is a migration, without its SQL: migrate list and status.
type migrationJSON struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	AppliedAt time.Time `json:"applied_at,omitzero"` // once applied
}

// migrateStatusJSON is migrate status.
type migrateStatusJSON struct {
	Schema  string          `json:"schema"`
	Current int             `json:"current"`
	Latest  int             `json:"latest"`
	Pending []migrationJSON `json:"pending"`
}

func migrationsFrom(list []migrate.MigrationStatus, pendingOnly bool) []migrationJSON {
	out := []migrationJSON{}
	for _, s := range list {
		if !pendingOnly || s.AppliedAt.IsZero() {
			out = append(out, migrationJSON{Version: s.Version, Name: s.Name, AppliedAt: s.AppliedAt})
		}
	}
	return out
}

// deadEventJSON is an event the relay gave up on: relay dlq list.
type deadEventJSON struct {
	ID        int64     `json:"id"`
	Topic     string    `json:"topic"`
	Key       string    `json:"key,omitempty"`
	Seq       int64     `json:"seq,omitempty"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	CreatedAt time.Time `json:"created_at"`
	DeadAt    time.Time `json:"dead_at"`
	BlocksKey bool      `json:"blocks_key"`
}

func deadEventsFrom(list []outbox.DeadEvent) []deadEventJSON {
	out := make([]deadEventJSON, len(list))
	for i, d := range list {
		out[i] = deadEventJSON{ID: d.ID, Topic: d.Topic, Key: d.Key, Seq: d.Seq, Attempts: d.Attempts,
			LastError: d.LastError, CreatedAt: d.CreatedAt, DeadAt: d.DeadAt, BlocksKey: d.BlocksKey}
	}
	return out
}
