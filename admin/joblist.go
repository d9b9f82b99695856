package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Job states as Jobs.List reports and selects them: the states of a live
// job in docket_jobs (docket.State), then dead for a job in the dead-letter
// table and completed for one in history. docs/state-machine.md shows how a
// job moves between them.
const (
	StateScheduled = string(core.StateScheduled)
	StateReady     = string(core.StateReady)
	StateRunning   = string(core.StateRunning)
	StateWaiting   = string(core.StateWaiting)
	StateDead      = "dead"
	StateCompleted = "completed"
)

// JobStates returns the states JobFilter.State selects, in the order the
// CLI and the dashboard offer them: every live state (core.States), then
// StateDead and StateCompleted. Each call returns a new slice.
func JobStates() []string {
	live := core.States()
	out := make([]string, 0, len(live)+2)
	for _, s := range live {
		out = append(out, string(s))
	}
	return append(out, StateDead, StateCompleted)
}

// The read statements of Jobs.List and Jobs.Get. Each table has one select
// list giving the columns of JobInfo in the same order; {{schema}} is the
// quoted schema. Pages are keyset pages in descending id order ("id < $6"
// always bounds the primary key scan; the first page passes the largest
// bigint), so page 1,000 costs what page 1 costs. An empty filter field is
// folded away by the planner when the statement is planned with its values,
// as Jobs.List has it planned. A filter that matches a small share of the
// jobs (one serial key of thousands) walks more of the index before the
// page is full.
var (
	sqlJobColsLive = `SELECT j.id, j.state, j.queue, j.kind, j.priority, j.tenant, COALESCE(j.serial_key, ''),
	COALESCE(j.unique_key, ''), j.attempts, j.max_attempts, j.created_at, j.run_at, j.locked_by, j.locked_at,
	j.lease_until, NULL::timestamptz AS finished_at, '' AS reason, COALESCE(j.last_error, ''), j.meta,
	j.progress, COALESCE(j.progress_message, ''), j.progress_at, j.cancel_requested_at`

	sqlJobColsDead = `SELECT j.id, 'dead', j.queue, j.kind, j.priority, j.tenant, COALESCE(j.serial_key, ''),
	COALESCE(j.unique_key, ''), j.attempts, j.max_attempts, j.created_at, j.run_at, NULL::uuid, NULL::timestamptz,
	NULL::timestamptz, j.dead_at, j.reason, COALESCE(j.last_error, ''), j.meta,
	j.progress, COALESCE(j.progress_message, ''), j.progress_at, NULL::timestamptz`

	sqlJobColsDone = `SELECT j.id, 'completed', j.queue, j.kind, j.priority, j.tenant, COALESCE(j.serial_key, ''),
	COALESCE(j.unique_key, ''), j.attempts, j.max_attempts, j.created_at, j.run_at, NULL::uuid, j.started_at,
	NULL::timestamptz, j.finished_at, '', '', j.meta,
	NULL::jsonb, '', NULL::timestamptz, NULL::timestamptz`

	// sqlJobFilter is the filter of a list: $1 queue, $2 kind, $3 tenant,
	// $4 serial key, $5 text in the last error (case-insensitive), $6 the
	// keyset bound, $7 the page size plus one (to know whether more follow).
	sqlJobFilter = `
WHERE {{state}} AND ($1 = '' OR j.queue = $1) AND ($2 = '' OR j.kind = $2) AND ($3 = '' OR j.tenant = $3)
	AND ($4 = '' OR j.serial_key = $4) AND ($5 = '' OR strpos(lower(j.last_error), lower($5)) > 0)
	AND j.id < $6
ORDER BY j.id DESC
LIMIT $7`

	// sqlJobPage is sqlJobFilter for Jobs.List, whose $8 is the lowest id
	// a page may look at (JobFilter.Scan's floor, else 0).
	sqlJobPage = strings.Replace(sqlJobFilter, "AND j.id < $6", "AND j.id < $6 AND j.id >= $8", 1)

	// sqlJobFloor finds how far down a bounded page may look: the lowest
	// of the next $2 ids of the state below the keyset bound $1, and how
	// many there were.
	sqlJobFloor = `SELECT count(*), COALESCE(min(s.id), 0) FROM (SELECT j.id FROM {{table}} j
WHERE {{state}} AND j.id < $1 ORDER BY j.id DESC LIMIT $2) s`

	// sqlJobByID finds a job where it is now: live first, then dead, then
	// in history. $2 says whether to fetch the payload and the result.
	sqlJobByID = pgsql.SQL(`SELECT b.*, w.host, w.pid FROM (
	(` + sqlJobColsLive + `, 1 AS place, CASE WHEN $2 THEN j.payload END, NULL::jsonb FROM {{schema}}.docket_jobs j WHERE j.id = $1)
	UNION ALL
	(` + sqlJobColsDead + `, 2, CASE WHEN $2 THEN j.payload END, CASE WHEN $2 THEN j.result END FROM {{schema}}.docket_jobs_dead j WHERE j.id = $1)
	UNION ALL
	(` + sqlJobColsDone + `, 3, CASE WHEN $2 THEN j.payload END, CASE WHEN $2 THEN j.result END FROM {{schema}}.docket_jobs_done j WHERE j.id = $1)
) b LEFT JOIN {{schema}}.docket_workers w ON w.id = b.locked_by
ORDER BY b.place
LIMIT 1`)
)

// listStatements renders the list statement of each state ("" lists every
// live job) and the statement that finds its floor for JobFilter.Scan.
func listStatements(schema string) (list, floor map[string]string) {
	live := func(pred string) string {
		return pgsql.Render(strings.Replace(sqlJobColsLive+"\nFROM {{schema}}.docket_jobs j"+sqlJobPage, "{{state}}", pred, 1), schema)
	}
	floorOf := func(table, pred string) string {
		return pgsql.Render(strings.NewReplacer("{{table}}", "{{schema}}."+table, "{{state}}", pred).Replace(sqlJobFloor), schema)
	}
	list = map[string]string{
		"": live("true"),
		StateDead: pgsql.Render(strings.Replace(sqlJobColsDead+"\nFROM {{schema}}.docket_jobs_dead j"+sqlJobPage,
			"{{state}}", "true", 1), schema),
		// History keeps no error: $5 must be empty (Jobs.List checks).
		StateCompleted: pgsql.Render(strings.Replace(strings.Replace(sqlJobColsDone+"\nFROM {{schema}}.docket_jobs_done j"+sqlJobPage,
			"{{state}}", "true", 1), "strpos(lower(j.last_error), lower($5)) > 0", "false", 1), schema),
	}
	floor = map[string]string{
		"":             floorOf("docket_jobs", "true"),
		StateDead:      floorOf("docket_jobs_dead", "true"),
		StateCompleted: floorOf("docket_jobs_done", "true"),
	}
	// A state name is a bare lowercase word (core.States), safe to quote
	// into the predicate; each state's own statement is planned for its
	// partial index.
	for _, s := range core.States() {
		pred := "j.state = '" + string(s) + "'"
		list[string(s)] = live(pred)
		floor[string(s)] = floorOf("docket_jobs", pred)
	}
	return list, floor
}

// MaxJobPage is the largest page Jobs.List returns.
const MaxJobPage = 1000

// ErrInvalidFilter is returned by Jobs.List for a filter it cannot run: an
// unknown state, a page size out of range, a value that is not valid text.
var ErrInvalidFilter = errors.New("docket: invalid job filter")

// JobFilter selects jobs for Jobs.List. Zero fields match everything; the
// fields that are set must all match.
type JobFilter struct {
	// State is one of JobStates; empty means every live job (every state
	// but dead and completed).
	State string
	// Queue, Kind, Tenant and SerialKey match exactly.
	Queue, Kind, Tenant, SerialKey string
	// ErrorContains matches jobs whose last error contains it, ignoring
	// case. Completed jobs keep no error: it cannot be combined with
	// StateCompleted.
	ErrorContains string
	// After continues a listing: only jobs with a smaller id (the Next of
	// the previous page). Zero starts at the newest job.
	After int64
	// Limit is the page size. Zero means 50; at most MaxJobPage.
	Limit int
	// Scan, when positive and another field than State filters, bounds
	// how many jobs of the state a page looks at: it stops after the next
	// Scan of them below After even if fewer than Limit matched, and says
	// so in JobPage.Scanned. Zero looks as far as it takes: a filter that
	// matches no job reads every job of the state.
	Scan int
}

// JobInfo is one job as an operator sees it, wherever it is now. It never
// holds the payload unless Jobs.Get was asked for it.
type JobInfo struct {
	ID int64
	// State is one of JobStates.
	State       string
	Queue       string
	Kind        string
	Priority    int
	Tenant      string
	SerialKey   string
	UniqueKey   string
	Attempts    int
	MaxAttempts int
	CreatedAt   time.Time
	// RunAt is when the job is (or was last) due.
	RunAt time.Time
	// LockedBy is the worker process running the job (uuid.Nil unless
	// running); WorkerHost and WorkerPID name it when it is registered.
	LockedBy   uuid.UUID `json:",omitempty"`
	WorkerHost string    `json:",omitempty"`
	WorkerPID  int       `json:",omitempty"`
	// StartedAt is when the current (running) or last (completed) attempt
	// started; LeaseUntil when a running job's lease ends.
	StartedAt  time.Time
	LeaseUntil time.Time
	// FinishedAt is when the job completed or died.
	FinishedAt time.Time
	// Reason is why a dead job died (a Reason constant); empty otherwise.
	Reason string
	// LastError is the error of the last failed attempt; history keeps none.
	LastError string
	Meta      map[string]string
	// Payload is nil unless Jobs.Get was asked for it.
	Payload json.RawMessage
	// Result is what the job's handler recorded with Job.SetResult (JSON):
	// for a completed job, its run's; for a dead one, its last attempt's.
	// Nil when it recorded none, for a live job, and unless Jobs.Get was
	// asked for the payload: a result may hold personal data too.
	Result json.RawMessage `json:",omitempty"`
	// Progress is the last progress the job's handler reported
	// (handlers.SetProgress) that a heartbeat wrote: a running job's, or
	// the one a dead job died with; nil when there is none. History does
	// not keep it.
	Progress *Progress `json:",omitempty"`
	// CancelRequestedAt is when an operator asked to cancel the running job
	// (Jobs.Cancel); zero when nobody did. The job ends in the dead-letter
	// table with reason cancelled.
	CancelRequestedAt time.Time
}

// Progress is what a running job's handler last reported (see
// handlers.SetProgress).
type Progress struct {
	// Value is the reported JSON value; nil when only a message was.
	Value json.RawMessage `json:",omitempty"`
	// Message is the reported message; empty when only a value was.
	Message string `json:",omitempty"`
	// At is when a heartbeat wrote it, by the database's clock.
	At time.Time
}

// JobPage is one page of Jobs.List.
type JobPage struct {
	Jobs []JobInfo
	// Next is the JobFilter.After of the next page; zero on the last page.
	Next int64
	// Scanned says the page stopped after JobFilter.Scan jobs without
	// filling up: more may match below them, from Next on.
	Scanned bool
}

// Check reports whether Jobs.List can run f, with ErrInvalidFilter saying
// what is wrong. Callers that take a filter from people check it before
// they connect.
func (f JobFilter) Check() error {
	if states := JobStates(); f.State != "" && !slices.Contains(states, f.State) {
		return fmt.Errorf("%w: unknown state %q (want one of %s)", ErrInvalidFilter, f.State, strings.Join(states, ", "))
	}
	if f.Limit < 0 || f.Limit > MaxJobPage {
		return fmt.Errorf("%w: page size %d: want 1 to %d", ErrInvalidFilter, f.Limit, MaxJobPage)
	}
	if f.After < 0 {
		return fmt.Errorf("%w: after %d: want a job id", ErrInvalidFilter, f.After)
	}
	if f.Scan < 0 {
		return fmt.Errorf("%w: scan %d: want a count of jobs, or 0 for no bound", ErrInvalidFilter, f.Scan)
	}
	if f.State == StateCompleted && f.ErrorContains != "" {
		return fmt.Errorf("%w: completed jobs keep no error to match", ErrInvalidFilter)
	}
	for _, v := range []string{f.Queue, f.Kind, f.Tenant, f.SerialKey, f.ErrorContains} {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) || len(v) > 1000 {
			return fmt.Errorf("%w: a filter value is not text of up to 1000 bytes", ErrInvalidFilter)
		}
	}
	return nil
}

// List returns one page of the jobs that match f, newest (highest id)
// first, without payloads. Each page is one index range scan of the state's
// table, whatever its depth.
func (h Jobs) List(ctx context.Context, db DB, f JobFilter) (JobPage, error) {
	c := h.c
	if err := f.Check(); err != nil {
		return JobPage{}, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = 50
	}
	after := f.After
	if after == 0 {
		after = math.MaxInt64
	}
	var page JobPage
	// A bounded page first finds the lowest id it may look at: the Scan-th
	// job of the state below After (an id-only walk), or none when fewer
	// are left.
	var floor int64
	scanned := 0
	if f.Scan > 0 && f.filtered() {
		if err := db.QueryRow(ctx, c.floor[f.State], pgx.QueryExecModeExec, after, f.Scan).Scan(&scanned, &floor); err != nil {
			return JobPage{}, c.wrapErr(err)
		}
		if scanned < f.Scan {
			floor = 0
		}
	}
	// QueryExecModeExec plans every page with its values (a custom plan):
	// only then does the state's predicate select its partial index and
	// an empty filter field fold away. A cached generic plan was measured
	// reading the whole scheduled index for one page.
	args := []any{pgx.QueryExecModeExec, f.Queue, f.Kind, f.Tenant, f.SerialKey, f.ErrorContains, after, limit + 1, floor}
	err := c.each(ctx, db, c.list[f.State], args,
		func(scan func(...any) error) error {
			j, err := scanJob(scan)
			page.Jobs = append(page.Jobs, j)
			return err
		})
	if err != nil {
		return JobPage{}, err
	}
	switch {
	case len(page.Jobs) > limit:
		page.Jobs = page.Jobs[:limit]
		page.Next = page.Jobs[limit-1].ID
	case floor > 0:
		page.Next, page.Scanned = floor, true
	}
	return page, nil
}

// filtered reports whether a field other than the state narrows f.
func (f JobFilter) filtered() bool {
	return f.Queue != "" || f.Kind != "" || f.Tenant != "" || f.SerialKey != "" || f.ErrorContains != ""
}

// Get returns one job wherever it is (live, dead or in history), with
// its payload and result only when withPayload is set, or ErrJobNotFound.
func (h Jobs) Get(ctx context.Context, db DB, id int64, withPayload bool) (JobInfo, error) {
	c := h.c
	var place int
	var payload, result []byte
	var host *string
	var pid *int32
	j, err := scanJob(db.QueryRow(ctx, sqlJobByID.For(c.schema), id, withPayload).Scan, &place, &payload, &result, &host, &pid)
	if isNoRows(err) {
		return JobInfo{}, fmt.Errorf("%w: no job %d", ErrJobNotFound, id)
	}
	if err != nil {
		return JobInfo{}, c.wrapErr(err)
	}
	if payload != nil {
		j.Payload = json.RawMessage(payload)
	}
	if result != nil {
		j.Result = json.RawMessage(result)
	}
	j.WorkerHost = str(host)
	if pid != nil {
		j.WorkerPID = int(*pid)
	}
	return j, nil
}

// scanJob scans the columns of the select lists, then extra.
func scanJob(scan func(...any) error, extra ...any) (JobInfo, error) {
	var j JobInfo
	var prio int16
	var lockedBy *uuid.UUID
	var started, lease, finished, progressAt, cancelAt *time.Time
	var meta, progress []byte
	var progressMsg string
	dest := append([]any{&j.ID, &j.State, &j.Queue, &j.Kind, &prio, &j.Tenant, &j.SerialKey, &j.UniqueKey,
		&j.Attempts, &j.MaxAttempts, &j.CreatedAt, &j.RunAt, &lockedBy, &started, &lease,
		&finished, &j.Reason, &j.LastError, &meta, &progress, &progressMsg, &progressAt, &cancelAt}, extra...)
	if err := scan(dest...); err != nil {
		return j, err
	}
	j.Priority = int(prio)
	if lockedBy != nil {
		j.LockedBy = *lockedBy
	}
	j.StartedAt, j.LeaseUntil, j.FinishedAt = deref(started), deref(lease), deref(finished)
	j.CancelRequestedAt = deref(cancelAt)
	if progressAt != nil {
		j.Progress = &Progress{Value: json.RawMessage(progress), Message: progressMsg, At: *progressAt}
	}
	if meta != nil {
		if err := json.Unmarshal(meta, &j.Meta); err != nil {
			return j, fmt.Errorf("docket: job %d kind %s: decode meta: %w", j.ID, j.Kind, err)
		}
	}
	return j, nil
}
