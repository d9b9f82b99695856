package admin

import (
	"context"
	"strings"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// CountLimit is where the counts of Jobs.CountStates stop: each state's
// count reads at most this many of its jobs. It is lower than
// OverviewLimit because a filter field that does not lead a state's index
// is tested on the rows read, each a heap fetch: six states of 10,000
// were measured at 6 to 25 times the cost of the page of jobs beside them.
const CountLimit = 1000

// StateCount is how many jobs of one state a filter matches, as
// Jobs.CountStates counts them.
type StateCount struct {
	// State is one of JobStates.
	State string
	// N is how many jobs of State match the filter among those read.
	N int64
	// More says the count stopped before the state's last job (it read
	// CountLimit of them): N is a lower bound, "N+".
	More bool
}

// countBranch is one state's count in sqlCountStates: the jobs of the
// state are read through its index, narrowed in the index by the filter
// field that leads it ({{inner}}), at most $7 of them; the rest of the
// filter ({{rest}}) is tested on the rows read. Filter parameters are those
// of sqlJobFilter ($1 queue, $2 kind, $3 tenant, $4 serial key, $5 error
// text).
const countBranch = `(SELECT '{{state}}', count(*) FILTER (WHERE m), count(*) = $6 FROM (
	SELECT {{rest}} AS m FROM {{schema}}.{{table}} j WHERE {{inner}}{{order}} LIMIT $6) s)`

// countFilters are the filter's tests by field, in sqlJobFilter's terms.
var countFilters = map[string]string{
	"queue":      "($1 = '' OR j.queue = $1)",
	"kind":       "($2 = '' OR j.kind = $2)",
	"tenant":     "($3 = '' OR j.tenant = $3)",
	"serial_key": "($4 = '' OR j.serial_key = $4)",
	"error":      "($5 = '' OR strpos(lower(j.last_error), lower($5)) > 0)",
}

// countStates are the states Jobs.CountStates counts, in JobStates order,
// with their table, predicate and the filter field their index leads
// with: the claim index (queue, …) for ready jobs, the serial lines'
// (serial_key, …) for waiting ones (it holds every waiting job), the
// (kind, dead_at) index for dead ones. Scheduled jobs are read by run_at,
// running ones by worker; dead and completed ones newest first (by
// dead_at, and by finished_at in each history partition), so that a count
// that stops covers the latest.
var countStates = []struct{ state, table, pred, lead, order string }{
	{StateScheduled, "docket_jobs", "j.state = 'scheduled'", "", ""},
	{StateReady, "docket_jobs", "j.state = 'ready'", "queue", ""},
	{StateWaiting, "docket_jobs", "j.state = 'waiting'", "serial_key", ""},
	{StateRunning, "docket_jobs", "j.state = 'running'", "", ""},
	{StateDead, "docket_jobs_dead", "true", "kind", " ORDER BY j.dead_at DESC"},
	{StateCompleted, "docket_jobs_done", "true", "", " ORDER BY j.finished_at DESC"},
}

// sqlCountStates counts, per state, the jobs the filter matches among at
// most $6 read; a row's last column says the read stopped at $6.
var sqlCountStates = func() *pgsql.Statement {
	var parts []string
	for _, s := range countStates {
		inner, rest := s.pred, []string{}
		for _, f := range filterFieldOrder {
			switch {
			case f == s.lead:
				inner += " AND " + countFilters[f]
			case f == "error" && s.state == StateCompleted:
				rest = append(rest, "$5 = ''") // history keeps no error
			default:
				rest = append(rest, countFilters[f])
			}
		}
		r := strings.NewReplacer("{{state}}", s.state, "{{table}}", s.table, "{{inner}}", inner, "{{order}}", s.order,
			"{{rest}}", strings.Join(rest, " AND "))
		parts = append(parts, r.Replace(countBranch))
	}
	return pgsql.SQL(strings.Join(parts, "\nUNION ALL\n"))
}()

// sqlCountSettings are sqlBoundedSettings, and a plan made with the
// values of each run (as Jobs.List has it): only then do empty filter
// fields fold away and the leading field pick its index. (The settings
// and the count go in one batch, where a per-query execution mode does
// not apply.)
const sqlCountSettings = `SELECT set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true),
	set_config('plan_cache_mode', 'force_custom_plan', true)`

// filterFieldOrder is the order of countFilters' fields.
var filterFieldOrder = []string{"queue", "kind", "tenant", "serial_key", "error"}

// CountStates counts, for each of JobStates, the jobs that f matches
// whatever its State, After and Limit: the counts a list of jobs shows
// beside its filter. Each state's count reads at most CountLimit of its
// jobs through an index (narrowed by the queue for ready jobs, the serial
// key for waiting ones and the kind for dead ones) and counts those f
// matches, so its cost does not grow with the backlog; a count that
// stopped says More. It returns ErrInvalidFilter for a filter Jobs.List
// refuses (the state aside).
func (h Jobs) CountStates(ctx context.Context, db DB, f JobFilter) ([]StateCount, error) {
	c := h.c
	f.State, f.After, f.Limit = "", 0, 0
	if err := f.Check(); err != nil {
		return nil, err
	}
	args := []any{f.Queue, f.Kind, f.Tenant, f.SerialKey, f.ErrorContains, int64(CountLimit)}
	out := make([]StateCount, 0, len(countStates))
	err := pgsql.Run(ctx, db, sqlCountSettings, sqlCountStates.For(c.schema), args, func(rows pgx.Rows) error {
		return pgsql.EachRow(rows, func(scan func(...any) error) error {
			var s StateCount
			err := scan(&s.State, &s.N, &s.More)
			out = append(out, s)
			return err
		})
	})
	if err != nil {
		return nil, c.wrapErr(err)
	}
	return out, nil
}
