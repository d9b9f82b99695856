package admin

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// sqlThroughput counts, per minute since $1, the jobs that completed (and
// the extra attempts they spent) from history and the jobs that died, each
// over its time index (docket_jobs_done_finished_idx covers the history
// side, so it is an index-only scan per partition).
var sqlThroughput = pgsql.SQL(`SELECT minute, sum(completed)::bigint, sum(retries)::bigint, sum(dead)::bigint FROM (
	SELECT date_trunc('minute', finished_at) AS minute, count(*) AS completed, sum(greatest(attempts - 1, 0)) AS retries, 0 AS dead
	FROM {{schema}}.docket_jobs_done WHERE finished_at >= $1 GROUP BY 1
	UNION ALL
	SELECT date_trunc('minute', dead_at), 0, 0, count(*)
	FROM {{schema}}.docket_jobs_dead WHERE dead_at >= $1 GROUP BY 1
) t
GROUP BY minute ORDER BY minute`)

// MinuteStat is what finished in one minute, over all queues.
type MinuteStat struct {
	// Minute is the start of the minute.
	Minute time.Time
	// Completed counts jobs that completed; Retries the attempts they
	// spent after their first; Dead the jobs dead-lettered.
	Completed, Retries, Dead int64
}

// Throughput returns what finished per minute since since, oldest first;
// minutes in which nothing finished are left out. Completions come from
// history: with history disabled only deaths are counted.
func (c *Client) Throughput(ctx context.Context, db DB, since time.Time) ([]MinuteStat, error) {
	var out []MinuteStat
	err := c.each(ctx, db, sqlThroughput.For(c.schema), []any{since}, func(scan func(...any) error) error {
		var m MinuteStat
		if err := scan(&m.Minute, &m.Completed, &m.Retries, &m.Dead); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	return out, err
}
