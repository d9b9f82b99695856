package queue

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Cursor claims.
//
// Every claimed job leaves an entry in the claim index that only vacuum
// removes, and vacuum cannot remove it while any transaction older than the
// claim is open (an idle psql session, a long report, a replica with
// hot_standby_feedback). A claim that scans the index from its start must
// step over every such entry, so its cost grows with the time the horizon is
// held times the claim rate, until workers fall behind for good.
//
// A job draws a fresh ready_seq from a sequence whenever it becomes ready,
// so new work only ever lands at the end of each (queue, priority) range of
// the index. Each Queue keeps, per (queue, priority, kinds), the highest
// ready_seq it claimed, and scans from there instead of from the start.
//
// Numbers are drawn before commit, so a transaction that commits late makes
// its job visible behind a cursor that has moved past it. Two things catch
// such stragglers. A claim looks back from the cursor the Queue held
// ClaimCursorLag ago (1s by default), which covers enqueuing transactions
// that commit within that time. Looking back steps over every entry claimed
// since, so while claims come back full (a backlog) only one claim every
// lagScanEvery looks back and the others start at the cursor itself; the
// first claim after a short one always looks back. And now and then a
// sweep looks behind the cursors, without locking anything, for ready jobs
// left there (late commits, and jobs a failed claimer had locked); the next
// claims take each one it found with a range that holds just that job. A
// sweep that finds as many as it may collect has found a backlog behind the
// cursor (enqueuing transactions slowed past the lag, as after a server
// restart on a loaded machine): it moves the cursor back to the first of
// them, so claims drain that backlog in order at the full claim rate
// instead of a sweep's worth at a time. The
// sweep steps over every entry behind the cursor, so with a connection pool
// it runs in a goroutine of its own, off the claim path, and the next sweep
// is put off by sweepSpacing times what this one cost: while the horizon is
// held, the sweeps grow slow but take a bounded share of the database's
// time and never delay a claim.

// sqlStragglers finds, without locking anything, up to $3 ready jobs of
// kinds $2 per (queue, priority) that wait at or behind the cursors
// ($1, $4, $5): jobs whose transaction committed after the claimers had
// moved past them. It steps over every entry behind the cursor, which is
// what makes it slow while the vacuum horizon is held, so it runs off
// the claim path.
var sqlStragglers = pgsql.SQL(`SELECT p.queue, p.priority, j.ready_seq
FROM unnest($1::text[], $4::smallint[], $5::bigint[]) AS p(queue, priority, upto)
CROSS JOIN LATERAL (
	SELECT ready_seq FROM {{schema}}.docket_jobs
	WHERE state = 'ready' AND queue = p.queue AND priority = p.priority
		AND ready_seq <= p.upto AND kind = ANY($2::text[])
	ORDER BY ready_seq
	LIMIT $3
) j`)

const (
	minSweepInterval = time.Second
	sweepSpacing     = 25
	sweepTimeout     = time.Minute
	// maxStragglers bounds the stragglers a sweep collects per (queue,
	// priority) and the ranges a claim adds for them.
	maxStragglers = 100
	// lagScanEvery is how often claims that follow full ones look back the
	// whole ClaimCursorLag. Stepping over the last second's claimed entries
	// on every claim cost a 100-slot drain about a fifth of its throughput.
	lagScanEvery = 50 * time.Millisecond
)

type cursorKey struct {
	queue    string
	priority int
	kinds    string
}

// mark is the highest ready_seq claimed as of a time.
type mark struct {
	at   time.Time
	seen int64
}

type cursor struct {
	seen       int64
	marks      []mark  // oldest first; marks[0] is the newest one at least lag old
	stragglers []int64 // ready_seq of jobs found behind the cursor, to claim
	// rewound is when a sweep last moved the cursor back; claims planned
	// before then do not move it forward again past the backlog.
	rewound time.Time
}

// after returns the cursor as it stood lag ago.
func (c *cursor) after(now time.Time, lag time.Duration) int64 {
	cut := now.Add(-lag)
	for len(c.marks) > 1 && !c.marks[1].at.After(cut) {
		c.marks = c.marks[1:]
	}
	if len(c.marks) == 0 || c.marks[0].at.After(cut) {
		return 0
	}
	return c.marks[0].seen
}

func (c *cursor) note(now time.Time, seen int64, lag time.Duration) {
	if seen <= c.seen {
		return
	}
	c.seen = seen
	if n := len(c.marks); n > 0 && now.Sub(c.marks[n-1].at) < lag/8 {
		c.marks[n-1].seen = seen // coalesce: a few marks per lag window suffice
		return
	}
	c.marks = append(c.marks, mark{at: now, seen: seen})
}

// rewind moves the cursor back to just before seq, for claims from now on.
func (c *cursor) rewind(now time.Time, seq int64) {
	c.seen = seq - 1
	c.marks = append(c.marks[:0], mark{seen: seq - 1})
	c.stragglers = c.stragglers[:0]
	c.rewound = now
}

// cursors holds a Queue's claim cursors.
type cursors struct {
	lag      time.Duration // <0: cursors off, every claim scans from the start
	mu       sync.Mutex
	byKey    map[cursorKey]*cursor
	sweepDue map[string]time.Time // by queue + kinds
	sweeping map[string]bool      // a sweep of queue + kinds is under way
	lagScans map[string]lagScan   // by kinds + queues of a claim
}

// lagScan is what decides whether the next claim of the same queues and
// kinds looks back the whole lag: when one last did, and whether the last
// claim came back full.
type lagScan struct {
	at   time.Time
	full bool
}

func newCursors(lag time.Duration) *cursors {
	return &cursors{lag: lag, byKey: map[cursorKey]*cursor{}, sweepDue: map[string]time.Time{},
		sweeping: map[string]bool{}, lagScans: map[string]lagScan{}}
}

// claimPlan is the (queue, priority, after, upto) ranges of one claim, in
// probe order: highest priority first, queues in the caller's order, and
// within a (queue, priority) the stragglers before the cursor's range.
type claimPlan struct {
	at         time.Time
	key        string // kinds + queues, for lagScans
	kinds      string
	queues     []string
	priorities []int16
	after      []int64
	upto       []int64
	sweeps     []sweep // sweeps due now
}

// sweep is one look behind the cursors of a queue for the given kinds.
type sweep struct {
	key        string // queue + kinds
	kinds      []string
	queues     []string // one entry per priority with a cursor
	priorities []int16
	upto       []int64
}

func (p *claimPlan) add(queue string, prio int, after, upto int64) {
	p.queues = append(p.queues, queue)
	p.priorities = append(p.priorities, int16(prio))
	p.after = append(p.after, after)
	p.upto = append(p.upto, upto)
}

func (cs *cursors) plan(queues, kinds []string, now time.Time) claimPlan {
	p := claimPlan{at: now, kinds: strings.Join(kinds, "\x00")}
	p.key = p.kinds + "\x01" + strings.Join(queues, "\x00")
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ls := cs.lagScans[p.key]
	lookBack := !ls.full || now.Sub(ls.at) >= min(lagScanEvery, cs.lag)
	if lookBack && cs.lag >= 0 {
		ls.at = now
		cs.lagScans[p.key] = ls
	}
	for prio := core.MaxPriority; prio >= core.MinPriority; prio-- {
		for _, q := range queues {
			var after int64
			if cs.lag >= 0 {
				if c := cs.byKey[cursorKey{q, prio, p.kinds}]; c != nil {
					for _, s := range c.stragglers {
						p.add(q, prio, s-1, s)
					}
					c.stragglers = c.stragglers[:0]
					after = c.after(now, cs.lag)
					if !lookBack {
						after = c.seen
					}
				}
			}
			p.add(q, prio, after, math.MaxInt64)
		}
	}
	if cs.lag < 0 {
		return p
	}
	for _, q := range queues {
		key := q + "\x00" + p.kinds
		if cs.sweeping[key] || now.Before(cs.sweepDue[key]) {
			continue
		}
		sw := sweep{key: key, kinds: kinds}
		for prio := core.MaxPriority; prio >= core.MinPriority; prio-- {
			if c := cs.byKey[cursorKey{q, prio, p.kinds}]; c != nil && c.seen > 0 {
				sw.queues = append(sw.queues, q)
				sw.priorities = append(sw.priorities, int16(prio))
				sw.upto = append(sw.upto, c.after(now, cs.lag))
			}
		}
		if len(sw.queues) == 0 {
			continue // no cursor yet: every claim scans this queue from the start
		}
		cs.sweeping[key] = true
		p.sweeps = append(p.sweeps, sw)
	}
	return p
}

// advance moves the cursors past the claimed jobs of a claim of up to limit.
func (cs *cursors) advance(p claimPlan, jobs []*core.Job, seqs []int64, limit int, now time.Time) {
	if cs.lag < 0 {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ls := cs.lagScans[p.key]
	ls.full = len(jobs) >= limit
	cs.lagScans[p.key] = ls
	for i, j := range jobs {
		key := cursorKey{j.Queue, j.Priority, p.kinds}
		c := cs.byKey[key]
		if c == nil {
			c = &cursor{}
			cs.byKey[key] = c
		}
		if p.at.Before(c.rewound) {
			continue // planned before a rewind: its jobs lie past the backlog
		}
		c.note(now, seqs[i], cs.lag)
	}
}

// passed moves the cursors of a plan's ranges to seq: a claim over them
// found no job at all, so none that was visible then lies at or below seq.
// A job that commits later behind it is a straggler, as for any cursor.
func (cs *cursors) passed(p claimPlan, seq int64, now time.Time) {
	if cs.lag < 0 {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for i, q := range p.queues {
		if p.upto[i] != math.MaxInt64 {
			continue // a straggler's range
		}
		key := cursorKey{q, int(p.priorities[i]), p.kinds}
		c := cs.byKey[key]
		if c == nil {
			c = &cursor{}
			cs.byKey[key] = c
		}
		if p.at.Before(c.rewound) {
			continue
		}
		c.note(now, seq, cs.lag)
	}
}

// swept records what a sweep found and when the next one is due.
func (cs *cursors) swept(sw sweep, found map[cursorKey][]int64, now time.Time, took time.Duration) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for key, seqs := range found {
		if c := cs.byKey[key]; c != nil {
			if len(seqs) >= maxStragglers {
				c.rewind(now, slices.Min(seqs))
				continue
			}
			for _, s := range seqs {
				if !slices.Contains(c.stragglers, s) && len(c.stragglers) < maxStragglers {
					c.stragglers = append(c.stragglers, s)
				}
			}
		}
	}
	delete(cs.sweeping, sw.key)
	cs.sweepDue[sw.key] = now.Add(max(minSweepInterval, sweepSpacing*took))
}

// runSweeps looks behind the cursors for the sweeps due. With a pool it does
// so in the background, so the claim is never held up; on a connection or
// transaction, which cannot serve two statements at once, it does so before
// the claim.
func (q *Queue) runSweeps(ctx context.Context, db DB, sweeps []sweep) {
	for _, sw := range sweeps {
		if pool, ok := db.(*pgxpool.Pool); ok {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), sweepTimeout)
				defer cancel()
				q.sweep(ctx, pool, sw)
			}()
			continue
		}
		q.sweep(ctx, db, sw)
	}
}

func (q *Queue) sweep(ctx context.Context, db DB, sw sweep) {
	start := time.Now()
	found := map[cursorKey][]int64{}
	kinds := strings.Join(sw.kinds, "\x00")
	args := []any{sw.queues, sw.kinds, maxStragglers, sw.priorities, sw.upto}
	// A failed sweep is tried again at the next due time; the stragglers
	// wait until then.
	_ = q.run(ctx, db, pgsql.IndexSettings, sqlStragglers.For(q.schema), args, func(rows pgx.Rows) error {
		var q string
		var prio int16
		var seq int64
		for rows.Next() {
			if err := rows.Scan(&q, &prio, &seq); err != nil {
				return err
			}
			key := cursorKey{q, int(prio), kinds}
			found[key] = append(found[key], seq)
		}
		return nil
	})
	q.cursors.swept(sw, found, time.Now(), time.Since(start))
}
