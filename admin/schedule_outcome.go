package admin

import (
	"context"
	"strconv"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// The outcomes of a schedule's last fire (ScheduleOutcome.Outcome).
const (
	// OutcomeRunning: the run is running, since At.
	OutcomeRunning = "running"
	// OutcomeRetrying: the run failed and waits for its next attempt, at At.
	OutcomeRetrying = "retrying"
	// OutcomeDue: the run is due since At and no worker has claimed it yet.
	OutcomeDue = "due"
	// OutcomeCompleted: the run completed; At is its fire time.
	OutcomeCompleted = "completed"
	// OutcomeDead: the run was dead-lettered, at At.
	OutcomeDead = "dead"
	// OutcomeFinished: the run ended, but more dead jobs of its kind than
	// Schedules.Outcomes reads followed: completed or dead, not known. At
	// is its fire time.
	OutcomeFinished = "finished"
)

// outcomeDeadScan is how many dead jobs of a schedule's kind, from its last
// fire time on, Schedules.Outcomes reads to find its run among them.
const outcomeDeadScan = 20

// ScheduleOutcome is what happened to the run of a schedule's last fire.
type ScheduleOutcome struct {
	// Outcome is one of the Outcome constants; empty when the schedule has
	// not fired yet.
	Outcome string
	// At is when: see each Outcome constant.
	At time.Time
	// JobID is the run's job; zero when not known (OutcomeCompleted,
	// OutcomeFinished).
	JobID int64
	// Attempts and MaxAttempts are the run's attempts so far and its
	// limit; Error its last error (OutcomeRetrying, OutcomeDead).
	Attempts, MaxAttempts int
	Error                 string
}

// sqlScheduleOutcomes reads, per schedule, its pending run (by its unique
// key, docket_jobs_unique_key_idx) and the first dead job of its kind and
// key since its last fire time among the first outcomeDeadScan dead jobs
// of that kind from then on (docket_jobs_dead_kind_idx): both lookups are
// bounded, whatever the backlog and the history. It takes no parameter,
// so that a cached plan is the one its values would get.
var sqlScheduleOutcomes = pgsql.SQL(`SELECT s.name, now(), s.last_fire,
	p.id, coalesce(p.state, ''), p.attempts, p.max_attempts, p.run_at, p.locked_at, coalesce(p.last_error, ''),
	d.id, d.dead_at, d.attempts, d.max_attempts, coalesce(d.last_error, ''), coalesce(d.mine, false), coalesce(d.n, 0)
FROM {{schema}}.docket_schedules s
LEFT JOIN LATERAL (
	SELECT j.id, j.state, j.attempts, j.max_attempts, j.run_at, j.locked_at, j.last_error
	FROM {{schema}}.docket_jobs j WHERE j.unique_key = 'schedule:' || s.name) p ON true
LEFT JOIN LATERAL (
	SELECT x.*, x.unique_key = 'schedule:' || s.name AS mine, count(*) OVER () AS n FROM (
		SELECT j.id, j.dead_at, j.attempts, j.max_attempts, j.last_error, j.unique_key
		FROM {{schema}}.docket_jobs_dead j
		WHERE j.kind = s.kind AND j.dead_at >= s.last_fire
		ORDER BY j.dead_at LIMIT ` + strconv.Itoa(outcomeDeadScan) + `) x
	ORDER BY x.unique_key IS DISTINCT FROM 'schedule:' || s.name, x.dead_at LIMIT 1) d ON true
ORDER BY s.name`)

// Outcomes returns, by schedule name, what happened to the run of each
// schedule's last fire: the pending run when it is due, running or
// retrying, else the run that last ended (dead, or completed). It reads
// two bounded index lookups per schedule (see docs/dashboard.md).
func (h Schedules) Outcomes(ctx context.Context, db DB) (map[string]ScheduleOutcome, error) {
	out := map[string]ScheduleOutcome{}
	err := h.c.each(ctx, db, sqlScheduleOutcomes.For(h.c.schema), nil, func(scan func(...any) error) error {
		var name, pState, pErr, dErr string
		var now time.Time
		var lastFire, pRun, pLocked, dAt *time.Time
		var pID, dID *int64
		var pAtt, pMax, dAtt, dMax *int
		var read int64
		var mine bool
		if err := scan(&name, &now, &lastFire, &pID, &pState, &pAtt, &pMax, &pRun, &pLocked, &pErr,
			&dID, &dAt, &dAtt, &dMax, &dErr, &mine, &read); err != nil {
			return err
		}
		var o ScheduleOutcome
		switch {
		case pID != nil && pState == StateRunning:
			o = ScheduleOutcome{Outcome: OutcomeRunning, At: deref(pLocked)}
		case pID != nil && *pAtt > 0:
			o = ScheduleOutcome{Outcome: OutcomeRetrying, At: *pRun, Error: pErr}
		case pID != nil && !pRun.After(now):
			o = ScheduleOutcome{Outcome: OutcomeDue, At: *pRun}
		case lastFire == nil:
			return nil // not fired yet
		case mine:
			o = ScheduleOutcome{Outcome: OutcomeDead, At: *dAt, JobID: *dID, Attempts: *dAtt, MaxAttempts: *dMax, Error: dErr}
		case read >= outcomeDeadScan:
			o = ScheduleOutcome{Outcome: OutcomeFinished, At: *lastFire}
		default:
			o = ScheduleOutcome{Outcome: OutcomeCompleted, At: *lastFire}
		}
		if pID != nil && o.Outcome != OutcomeDead && o.Outcome != OutcomeCompleted && o.Outcome != OutcomeFinished {
			o.JobID, o.Attempts, o.MaxAttempts = *pID, *pAtt, *pMax
		}
		out[name] = o
		return nil
	})
	return out, err
}
