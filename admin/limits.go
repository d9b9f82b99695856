package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5/pgconn"
)

// List are kept in docket_limits (migration 013). Workers read them every
// poll interval and enforce them in the database (see docs/flow-control.md).
var (
	// sqlSetLimit upserts a limit; a changed limit's rate buckets start
	// afresh (full).
	sqlSetLimit = pgsql.SQL(`WITH l AS (
INSERT INTO {{schema}}.docket_limits AS l
	(name, queue, kind, per_tenant, max_running, rate, period_ms, burst, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
ON CONFLICT (name) DO UPDATE SET queue = EXCLUDED.queue, kind = EXCLUDED.kind,
	per_tenant = EXCLUDED.per_tenant, max_running = EXCLUDED.max_running, rate = EXCLUDED.rate,
	period_ms = EXCLUDED.period_ms, burst = EXCLUDED.burst, updated_at = now()
RETURNING name
)
DELETE FROM {{schema}}.docket_limit_buckets WHERE name = (SELECT name FROM l)`)

	sqlRemoveLimit = pgsql.SQL(`DELETE FROM {{schema}}.docket_limits WHERE name = $1`)

	sqlLimits = pgsql.SQL(`SELECT name, COALESCE(queue, ''), COALESCE(kind, ''), per_tenant,
	COALESCE(max_running, 0), COALESCE(rate, 0), COALESCE(period_ms, 0), COALESCE(burst, 0)
FROM {{schema}}.docket_limits ORDER BY name`)

	// sqlLimitUsage counts each key's places in use the way the limited
	// claim does (docket_claim_limited): each worker's running jobs of the
	// key, but no more than the places it holds of it, if any. It also
	// reads the key's bucket. The running jobs are read by the running
	// index and grouped by queue, kind, tenant and worker first, so that
	// docket_limit_of runs once per queue and kind, not once per running
	// job. A bucket's tokens now are what the claim would find: its stored
	// tokens refilled at the limit's rate since, up to the burst; a bucket
	// that owes tokens claimed ahead of them (migration 029) holds none.
	sqlLimitUsage = pgsql.SQL(`WITH r AS (
	SELECT queue, kind, tenant, locked_by, count(*) AS n FROM {{schema}}.docket_jobs WHERE state = 'running' GROUP BY 1, 2, 3, 4
), m AS (
	SELECT queue, kind, {{schema}}.docket_limit_of(queue, kind) AS name FROM (SELECT DISTINCT queue, kind FROM r) qk
)
SELECT name, key, sum(running)::integer, max(tokens), max(tokens_now) FROM (
	SELECT w.name, w.key, least(w.n, COALESCE(p.places, w.n)) AS running,
		NULL::float8 AS tokens, NULL::float8 AS tokens_now
	FROM (
		SELECT l.name, CASE WHEN l.per_tenant THEN r.tenant ELSE '' END AS key, r.locked_by, sum(r.n) AS n
		FROM r JOIN m ON m.queue = r.queue AND m.kind = r.kind
		JOIN {{schema}}.docket_limits l ON l.name = m.name
		GROUP BY 1, 2, 3
	) w
	LEFT JOIN {{schema}}.docket_limit_places p ON p.name = w.name AND p.key = w.key AND p.holder = w.locked_by
	UNION ALL
	SELECT b.name, b.key, 0, greatest(0, b.tokens), greatest(0, least(l.burst::float8,
		b.tokens + l.rate * extract(epoch FROM clock_timestamp() - b.refilled_at) * 1000 / l.period_ms))
	FROM {{schema}}.docket_limit_buckets b JOIN {{schema}}.docket_limits l ON l.name = b.name
) u
GROUP BY 1, 2
ORDER BY 1, 2`)
)

// Limit is a flow-control rule that workers in every process enforce
// through the database: at most MaxRunning jobs running at once, and at
// most Rate jobs started per Per, in bursts of up to Burst. It governs the
// jobs of one Kind, of one Queue, or, with neither, all jobs; with
// PerTenant it applies to each tenant separately (jobs without a tenant
// share one budget). A job is governed by the most specific limit that
// matches it: its kind's, else its queue's, else the global one.
//
// Jobs a limit holds back stay ready and hold no worker slot: other kinds
// of the same queue run meanwhile.
type Limit struct {
	// Name identifies the limit; Limits.Set with the same name replaces it.
	// At most MaxNameLen bytes, no spaces or control characters.
	Name string
	// Queue or Kind (not both) says which jobs the limit governs; neither
	// means every job.
	Queue, Kind string
	// PerTenant applies the limit to each tenant on its own.
	PerTenant bool
	// MaxRunning, when positive, is how many governed jobs (of one tenant,
	// with PerTenant) may run at once, across all workers. A job counts from
	// its claim until it leaves the running state, by its outcome, a release
	// at shutdown, or the reaper once a crashed worker's lease expires.
	MaxRunning int
	// Rate, when positive, is how many governed jobs (of one tenant, with
	// PerTenant) may start per Per; every run counts, retries included.
	// Per is required with Rate and at least a millisecond. Burst is how
	// many may start at once after a quiet spell; zero means Rate.
	Rate  int
	Per   time.Duration
	Burst int
}

// ErrInvalidLimit wraps every rejection of Limits.Set. Nothing is written.
var ErrInvalidLimit = errors.New("docket: invalid limit")

// validate checks l and fills in its defaults.
func (l Limit) validate() (Limit, error) {
	bad := func(format string, args ...any) (Limit, error) {
		return Limit{}, fmt.Errorf("%w %q: %s", ErrInvalidLimit, l.Name, fmt.Sprintf(format, args...))
	}
	for _, f := range []struct{ what, v string }{{"limit", l.Name}, {"queue", l.Queue}, {"kind", l.Kind}} {
		if err := checkName(f.what, f.v, f.what != "limit"); err != nil {
			return bad("%v", errors.Unwrap(err))
		}
	}
	switch {
	case l.Queue != "" && l.Kind != "":
		return bad("a limit governs a queue or a kind, not both")
	case l.MaxRunning < 0 || l.Rate < 0 || l.Burst < 0 || l.Per < 0:
		return bad("negative MaxRunning, Rate, Burst or Per")
	case l.MaxRunning == 0 && l.Rate == 0:
		return bad("want MaxRunning or Rate")
	case l.Rate == 0 && (l.Per != 0 || l.Burst != 0):
		return bad("Per and Burst need a Rate")
	case l.Rate > 0 && l.Per < time.Millisecond:
		return bad("Rate needs Per of at least 1ms")
	case l.MaxRunning > maxInt32 || l.Rate > maxInt32 || l.Burst > maxInt32:
		return bad("MaxRunning, Rate and Burst must fit in 32 bits")
	}
	if l.Rate > 0 && l.Burst == 0 {
		l.Burst = l.Rate
	}
	return l, nil
}

const maxInt32 = 1<<31 - 1

// Check reports whether Limits.Set would accept l, without a database: nil,
// or an error wrapping ErrInvalidLimit that says what is wrong. Callers
// that take a limit from people check it before they connect. Only
// Set knows whether another limit already governs the same jobs.
func (l Limit) Check() error {
	_, err := l.validate()
	return err
}

// Set creates or replaces the limit named l.Name. Workers apply it
// from their next read of the limits, within a poll interval. A replaced
// rate limit starts with full buckets.
func (h Limits) Set(ctx context.Context, db DB, l Limit) error {
	c := h.c
	l, err := l.validate()
	if err != nil {
		return err
	}
	zeroNull := func(n int) any {
		if n == 0 {
			return nil
		}
		return n
	}
	var period any
	if l.Rate > 0 {
		period = l.Per.Milliseconds()
	}
	if _, err := db.Exec(ctx, sqlSetLimit.For(c.schema), l.Name, pgsql.NullString(l.Queue), pgsql.NullString(l.Kind), l.PerTenant,
		zeroNull(l.MaxRunning), zeroNull(l.Rate), period, zeroNull(l.Burst)); err != nil {
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return fmt.Errorf("%w %q: another limit already governs %s", ErrInvalidLimit, l.Name, l.Scope())
		}
		return c.wrapErr(err)
	}
	return nil
}

// Scope describes, in words, which jobs l governs: "kind K", "queue Q" or
// "every job".
func (l Limit) Scope() string {
	switch {
	case l.Kind != "":
		return "kind " + l.Kind
	case l.Queue != "":
		return "queue " + l.Queue
	}
	return "every job"
}

// Describe says what l allows, in a line: "kind mail, per tenant: 5
// running at once, 100 started per 1m0s (burst 10)".
func (l Limit) Describe() string {
	var parts []string
	if l.MaxRunning > 0 {
		parts = append(parts, fmt.Sprintf("%d running at once", l.MaxRunning))
	}
	if l.Rate > 0 {
		burst := ""
		if l.Burst > 0 && l.Burst != l.Rate {
			burst = fmt.Sprintf(" (burst %d)", l.Burst)
		}
		parts = append(parts, fmt.Sprintf("%d started per %s%s", l.Rate, l.Per, burst))
	}
	scope := l.Scope()
	if l.PerTenant {
		scope += ", per tenant"
	}
	return scope + ": " + strings.Join(parts, ", ")
}

// Remove deletes the limit named name; false if there was none.
func (h Limits) Remove(ctx context.Context, db DB, name string) (bool, error) {
	c := h.c
	tag, err := db.Exec(ctx, sqlRemoveLimit.For(c.schema), name)
	if err != nil {
		return false, c.wrapErr(err)
	}
	return tag.RowsAffected() > 0, nil
}

// List returns every limit, by name.
func (h Limits) List(ctx context.Context, db DB) ([]Limit, error) {
	c := h.c
	var out []Limit
	err := c.each(ctx, db, sqlLimits.For(c.schema), nil, func(scan func(...any) error) error {
		var l Limit
		var per int64
		if err := scan(&l.Name, &l.Queue, &l.Kind, &l.PerTenant, &l.MaxRunning, &l.Rate, &per, &l.Burst); err != nil {
			return err
		}
		l.Per = time.Duration(per) * time.Millisecond
		out = append(out, l)
		return nil
	})
	return out, err
}

// Usage is one key of a limit now: the limit itself, or one tenant of
// a per-tenant limit (Tenant "" for jobs without one).
type LimitUsage struct {
	Limit  string
	Tenant string
	// Running is how many of the key's places its running jobs use: a
	// worker process may hold more of a tenant's jobs than the places it
	// holds, and runs at most that many of them at once.
	Running int
	// Tokens is what the key's rate bucket held when a claim last looked,
	// 0 while it owes tokens that claims took ahead of them; -1 without a
	// bucket (no rate, or no claim yet).
	Tokens float64
	// TokensNow is what the bucket holds now: Tokens refilled at the
	// limit's rate since, up to its burst; the starts a claim may make at
	// once. -1 without a bucket.
	TokensNow float64
}

// Usage reports each limit's keys that have running jobs or a rate
// bucket.
func (h Limits) Usage(ctx context.Context, db DB) ([]LimitUsage, error) {
	c := h.c
	var out []LimitUsage
	err := c.each(ctx, db, sqlLimitUsage.For(c.schema), nil, func(scan func(...any) error) error {
		var u LimitUsage
		var tokens, now *float64
		if err := scan(&u.Limit, &u.Tenant, &u.Running, &tokens, &now); err != nil {
			return err
		}
		u.Tokens, u.TokensNow = -1, -1
		if tokens != nil {
			u.Tokens = *tokens
		}
		if now != nil {
			u.TokensNow = *now
		}
		out = append(out, u)
		return nil
	})
	return out, err
}
