package admin

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
)

// MaxRunningJobs bounds the jobs Client.RunningJobs returns.
const MaxRunningJobs = 1000

// RunningJob is a job a worker process runs now.
type RunningJob struct {
	ID    int64
	Kind  string
	Queue string
	// Worker is the process running it (the job's locked_by); Since is
	// when it claimed it.
	Worker uuid.UUID
	Since  time.Time
}

// sqlRunningJobs lists the running jobs of the given workers, oldest
// claim first, through the running index (docket_jobs_running_idx, on
// locked_by): their number is bounded by the workers' slots.
var sqlRunningJobs = pgsql.SQL(`SELECT id, kind, queue, locked_by, locked_at
FROM {{schema}}.docket_jobs
WHERE state = 'running' AND locked_by = ANY($1::uuid[])
ORDER BY locked_at, id
LIMIT $2`)

// RunningJobs returns the jobs that the given worker processes run now,
// oldest claim first, at most MaxRunningJobs.
func (c *Client) RunningJobs(ctx context.Context, db DB, workers []uuid.UUID) ([]RunningJob, error) {
	var out []RunningJob
	err := c.each(ctx, db, sqlRunningJobs.For(c.schema), []any{workers, MaxRunningJobs}, func(scan func(...any) error) error {
		var j RunningJob
		err := scan(&j.ID, &j.Kind, &j.Queue, &j.Worker, &j.Since)
		out = append(out, j)
		return err
	})
	return out, err
}
