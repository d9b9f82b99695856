package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Kinds of the harness's jobs.
const (
	KindPlain = "faultsuite_plain" // a plain handler: its effect at least once
	KindTx    = "faultsuite_tx"    // a transactional handler: its effect exactly once
	KindTick  = "faultsuite_tick"  // a schedule's run: its fire recorded exactly once
)

// Modes of a Work job: how its handler behaves before it succeeds.
const (
	ModeFlaky  = "flaky"  // the first attempt fails, the second succeeds
	ModeDoomed = "doomed" // every attempt fails: the job ends dead
	ModeSnooze = "snooze" // the first run snoozes, the next one succeeds
	ModeSlow   = "slow"   // records its run, then sleeps SleepMS deaf to its context
)

// Work is what a harness job carries: its number, unique in a run, which
// the checker finds again in history or dead letters, and how it behaves.
type Work struct {
	N       int    `json:"n"`
	Mode    string `json:"mode,omitempty"`
	SleepMS int    `json:"sleep_ms,omitempty"`
}

// Plain is a Work job run by a plain handler.
type Plain struct{ Work }

// Kind returns KindPlain.
func (Plain) Kind() string { return KindPlain }

// Tx is a Work job run by a transactional handler.
type Tx struct{ Work }

// Kind returns KindTx.
func (Tx) Kind() string { return KindTx }

// Tick is the job of the harness's schedules.
type Tick struct{}

// Kind returns KindTick.
func (Tick) Kind() string { return KindTick }

// tablesDDL creates the tables the handlers and the enqueuer write:
// effects (one row per successful run of a Work job, with when its handler
// started and, in at, when it wrote the effect), snoozed (the jobs
// whose first run snoozed), ticks (one row per schedule run) and batches
// (the enqueuer's committed batches).
const tablesDDL = `
CREATE TABLE IF NOT EXISTS %[1]s.effects (job_id bigint NOT NULL, n int NOT NULL, attempt int NOT NULL, kind text NOT NULL, worker text NOT NULL,
	started timestamptz, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS %[1]s.snoozed (job_id bigint PRIMARY KEY);
CREATE TABLE IF NOT EXISTS %[1]s.ticks (name text NOT NULL, fire timestamptz NOT NULL, job_id bigint NOT NULL);
CREATE TABLE IF NOT EXISTS %[1]s.batches (b int PRIMARY KEY, jobs int NOT NULL, doomed int NOT NULL)`

// CreateTables creates the harness's tables in schema, which must exist.
func CreateTables(ctx context.Context, db *pgxpool.Pool, schema string) error {
	_, err := db.Exec(ctx, fmt.Sprintf(tablesDDL, pgx.Identifier{schema}.Sanitize()))
	return err
}

// errAttempt is what flaky and doomed jobs fail with.
var errAttempt = errors.New("faultsuite: this attempt fails on purpose")

// register adds the harness's handlers to reg. Plain handlers write their
// effect through db, transactional ones in their transaction; me is the
// worker id recorded with each effect.
func register(reg *handlers.Registry, db *pgxpool.Pool, schema, me string) {
	s := pgx.Identifier{schema}.Sanitize()
	effect := `INSERT INTO ` + s + `.effects (job_id, n, attempt, kind, worker, started) VALUES ($1, $2, $3, $4, $5, $6)`
	snooze := `INSERT INTO ` + s + `.snoozed VALUES ($1) ON CONFLICT DO NOTHING`
	tick := `INSERT INTO ` + s + `.ticks (name, fire, job_id) VALUES ($1, $2, $3)`
	// before runs a Work job's mode; it returns a non-nil error to end the
	// run with it, or done to end it with success and no effect.
	before := func(ctx context.Context, j *core.Job, w Work) (done bool, err error) {
		switch w.Mode {
		case ModeFlaky:
			if j.Attempt == 1 {
				return false, errAttempt
			}
		case ModeDoomed:
			return false, errAttempt
		case ModeSnooze:
			tag, err := db.Exec(ctx, snooze, j.ID)
			if err != nil {
				return false, err
			}
			if tag.RowsAffected() == 1 {
				return false, handlers.Snooze(200 * time.Millisecond)
			}
		case ModeSlow:
			if _, err := db.Exec(ctx, effect, j.ID, w.N, j.Attempt, j.Kind, me, time.Now()); err != nil {
				return false, err
			}
			time.Sleep(time.Duration(w.SleepMS) * time.Millisecond)
			return true, nil
		}
		if w.SleepMS > 0 {
			time.Sleep(time.Duration(w.SleepMS) * time.Millisecond)
		}
		return false, nil
	}
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[Plain]) error {
		started := time.Now()
		if done, err := before(ctx, j.Job, j.Args.Work); done || err != nil {
			return err
		}
		_, err := db.Exec(ctx, effect, j.ID, j.Args.N, j.Attempt, j.Kind, me, started)
		return err
	}, handlers.KindOpts{})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[Tx]) error {
		started := time.Now()
		if done, err := before(ctx, j.Job, j.Args.Work); done || err != nil {
			return err
		}
		_, err := tx.Exec(ctx, effect, j.ID, j.Args.N, j.Attempt, j.Kind, me, started)
		return err
	}, handlers.KindOpts{})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[Tick]) error {
		fire, err := time.Parse(time.RFC3339Nano, j.Meta[schedule.MetaFire])
		if err != nil {
			return handlers.Cancel(fmt.Errorf("faultsuite: job %d has no fire time: %w", j.ID, err))
		}
		_, err = tx.Exec(ctx, tick, j.Meta[schedule.MetaSchedule], fire, j.ID)
		return err
	}, handlers.KindOpts{})
}
