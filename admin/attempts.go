package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
)

// Attempt outcomes as Attempt.Outcome reports them. A run that ended the
// job in the dead-letter table has the dead letter's Reason as its outcome
// (ReasonExhausted, ReasonCancelled, ReasonUndecodable), and a run whose
// worker stopped heartbeating has ReasonLeaseExpired whether the job was
// retried or dead-lettered.
const (
	AttemptRunning   = "running"   // the run in progress
	AttemptCompleted = "completed" // the handler succeeded
	AttemptFailed    = "failed"    // the handler failed and the job was retried
)

// MaxAttemptError is how many characters of a failed run's error its
// Attempt keeps; a longer error is cut there and ends with
// " …[truncated: N more characters]". A job's LastError keeps more.
const MaxAttemptError = pgsql.MaxAttemptError

// MaxAttempts is how many ended runs a job keeps in its attempt history:
// past it, the oldest is dropped for each new one.
const MaxAttempts = pgsql.MaxAttemptLog

// Attempt is one run of a job: when it started and ended, which worker
// process ran it, how it ended and with what error.
type Attempt struct {
	// Attempt is the job's attempt counter during the run: 1 for the first.
	// Snoozed runs and runs released at shutdown are not attempts and are
	// not listed; a replayed dead letter counts from 1 again.
	Attempt int
	// StartedAt is when the run was claimed; FinishedAt when its outcome
	// was written (when the reaper took it back, for ReasonLeaseExpired),
	// zero while it runs.
	StartedAt, FinishedAt time.Time
	// Worker is the worker process's id; WorkerHost and WorkerPID name it
	// when it was registered (docket_workers).
	Worker     uuid.UUID `json:",omitempty"`
	WorkerHost string    `json:",omitempty"`
	WorkerPID  int       `json:",omitempty"`
	// Outcome is AttemptRunning, AttemptCompleted, AttemptFailed or a
	// Reason constant.
	Outcome string
	// Error is the run's error, cut at MaxAttemptError characters; empty
	// for a completion.
	Error string `json:",omitempty"`
}

// attemptEntry is an entry of attempt_log as the statements of
// internal/engine/pgsql/attempts.go write it.
type attemptEntry struct {
	Attempt    int        `json:"attempt"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Worker     uuid.UUID  `json:"worker"`
	Host       string     `json:"host"`
	PID        int        `json:"pid"`
	Outcome    string     `json:"outcome"`
	Error      string     `json:"error"`
}

// sqlAttempts reads a job's attempt_log wherever the job is (live first,
// then dead, then history) and the run the log does not hold: a live job's
// run in progress, a completed job's last run.
var sqlAttempts = pgsql.SQL(`SELECT b.place, b.attempt_log, b.attempts, b.worker, b.started_at, b.finished_at, w.host, w.pid FROM (
	(SELECT 1 AS place, attempt_log, attempts, locked_by AS worker, locked_at AS started_at, NULL::timestamptz AS finished_at
	 FROM {{schema}}.docket_jobs WHERE id = $1)
	UNION ALL
	(SELECT 2, attempt_log, attempts, NULL::uuid, NULL::timestamptz, NULL::timestamptz FROM {{schema}}.docket_jobs_dead WHERE id = $1)
	UNION ALL
	(SELECT 3, attempt_log, attempts, worker_id, started_at, finished_at FROM {{schema}}.docket_jobs_done WHERE id = $1)
) b LEFT JOIN {{schema}}.docket_workers w ON w.id = b.worker
ORDER BY b.place
LIMIT 1`)

// Attempts returns the runs of job id, oldest first, wherever the job is
// (live, dead or in history), or ErrJobNotFound. A live job's run in
// progress comes last as AttemptRunning; a completed job's last run as
// AttemptCompleted. The history goes with the job: with its history
// partition, with a purged dead letter, and at once for a job that
// completes while history is off (Config.DisableHistory). A replayed dead
// letter keeps its runs before the replay.
func (h Jobs) Attempts(ctx context.Context, db DB, id int64) ([]Attempt, error) {
	c := h.c
	var (
		place, attempts int
		log             []byte
		worker          *uuid.UUID
		started, ended  *time.Time
		host            *string
		pid             *int32
	)
	err := db.QueryRow(ctx, sqlAttempts.For(c.schema), id).Scan(&place, &log, &attempts, &worker, &started, &ended, &host, &pid)
	if isNoRows(err) {
		return nil, fmt.Errorf("%w: no job %d", ErrJobNotFound, id)
	}
	if err != nil {
		return nil, c.wrapErr(err)
	}
	var entries []attemptEntry
	if log != nil {
		if err := json.Unmarshal(log, &entries); err != nil {
			return nil, fmt.Errorf("docket: job %d: decode attempt history: %w", id, err)
		}
	}
	out := make([]Attempt, 0, len(entries)+1)
	for _, e := range entries {
		out = append(out, Attempt{Attempt: e.Attempt, StartedAt: deref(e.StartedAt), FinishedAt: deref(e.FinishedAt),
			Worker: e.Worker, WorkerHost: e.Host, WorkerPID: e.PID, Outcome: e.Outcome, Error: e.Error})
	}
	if started != nil && (place == 3 || worker != nil) {
		last := Attempt{Attempt: attempts, StartedAt: *started, WorkerHost: str(host), Outcome: AttemptRunning}
		if worker != nil {
			last.Worker = *worker
		}
		if pid != nil {
			last.WorkerPID = int(*pid)
		}
		if place == 3 {
			last.Outcome, last.FinishedAt = AttemptCompleted, deref(ended)
		}
		out = append(out, last)
	}
	return out, nil
}
