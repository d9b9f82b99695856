package outbox

import (
	"strings"
	"sync"
	"time"

	"github.com/docketq/docket"
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
// the index. Each client keeps, per (queue, priority, kinds), the highest
// ready_seq it claimed, and scans from there instead of from the start.
//
// Numbers are drawn before commit, so a transaction that commits late makes
// its job visible behind a cursor that has moved past it. Two things catch
// such jobs: the cursor used in a claim is the one the client held lag ago
// (ClaimCursorLag, 1s by default), which covers enqueuing transactions that
// commit within that time; and a periodic sweep claims from the start of
// the index, which covers the rest (and jobs a failed claimer had locked).
// A sweep's cost is measured and the next one is put off by at least
// sweepSpacing times that cost, so that while the horizon is held the
// sweeps, now expensive, take a bounded share of the claim time.

const (
	minSweepInterval = time.Second
	sweepSpacing     = 25
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
	seen  int64
	marks []mark // oldest first; marks[0] is the newest one at least lag old
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

// cursors holds a client's claim cursors.
type cursors struct {
	lag      time.Duration // <0: cursors off, every claim scans from the start
	mu       sync.Mutex
	byKey    map[cursorKey]*cursor
	sweepDue map[string]time.Time // by queue + kinds
}

func newCursors(lag time.Duration) *cursors {
	return &cursors{lag: lag, byKey: map[cursorKey]*cursor{}, sweepDue: map[string]time.Time{}}
}

// claimPlan is the (queue, priority, after) triples of one claim, in probe
// order: highest priority first, queues in the caller's order.
type claimPlan struct {
	kinds      string
	queues     []string
	priorities []int16
	after      []int64
	sweep      []string // sweep keys of the queues scanned from the start
}

func (cs *cursors) plan(queues, kinds []string, now time.Time) claimPlan {
	p := claimPlan{kinds: strings.Join(kinds, "\x00")}
	n := (MaxPriority - MinPriority + 1) * len(queues)
	p.queues, p.priorities, p.after = make([]string, 0, n), make([]int16, 0, n), make([]int64, 0, n)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	fromStart := make([]bool, len(queues))
	for i, q := range queues {
		key := q + "\x00" + p.kinds
		if cs.lag < 0 || !now.Before(cs.sweepDue[key]) {
			fromStart[i] = true
			p.sweep = append(p.sweep, key)
		}
	}
	for prio := MaxPriority; prio >= MinPriority; prio-- {
		for i, q := range queues {
			var after int64
			if !fromStart[i] {
				if c := cs.byKey[cursorKey{q, prio, p.kinds}]; c != nil {
					after = c.after(now, cs.lag)
				}
			}
			p.queues = append(p.queues, q)
			p.priorities = append(p.priorities, int16(prio))
			p.after = append(p.after, after)
		}
	}
	return p
}

// advance moves the cursors past the claimed jobs and schedules the next
// sweep of every queue this claim swept, spaced by what the sweep cost.
func (cs *cursors) advance(p claimPlan, jobs []*docket.Job, seqs []int64, now time.Time, took time.Duration) {
	if cs.lag < 0 {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for i, j := range jobs {
		key := cursorKey{j.Queue, j.Priority, p.kinds}
		c := cs.byKey[key]
		if c == nil {
			c = &cursor{}
			cs.byKey[key] = c
		}
		c.note(now, seqs[i], cs.lag)
	}
	for _, key := range p.sweep {
		cs.sweepDue[key] = now.Add(max(minSweepInterval, sweepSpacing*took))
	}
}
