package queue

import (
	"math"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
)

// TestCursorLooksBackAfterShortClaimsAndEveryInterval checks when a claim
// starts at the lagged cursor and when at the cursor itself: after a short
// claim always, after full ones only once every lagScanEvery.
func TestCursorLooksBackAfterShortClaimsAndEveryInterval(t *testing.T) {
	t.Parallel()
	cs := newCursors(time.Second)
	queues, kinds := []string{"q"}, []string{"k"}
	t0 := time.Unix(1_000_000, 0)
	// after returns where the claim planned at now scans priority 0 from.
	after := func(now time.Time) (claimPlan, int64) {
		t.Helper()
		p := cs.plan(queues, kinds, now)
		for i := range p.queues {
			if p.priorities[i] == 0 && p.upto[i] == math.MaxInt64 {
				return p, p.after[i]
			}
		}
		t.Fatal("no range for priority 0")
		return p, 0
	}
	claimed := func(p claimPlan, from, to int64, limit int, now time.Time) {
		var jobs []*core.Job
		var seqs []int64
		for s := from; s <= to; s++ {
			jobs = append(jobs, &core.Job{Queue: "q"})
			seqs = append(seqs, s)
		}
		cs.advance(p, jobs, seqs, limit, now)
	}
	steps := []struct {
		at       time.Duration
		want     int64
		from, to int64
		limit    int
		why      string
	}{
		{0, 0, 1, 10, 10, "no cursor yet"},
		{1500 * time.Millisecond, 10, 11, 20, 10, "a full claim more than lagScanEvery after the last look back: the cursor of 1s ago"},
		{1520 * time.Millisecond, 20, 21, 30, 10, "after a full claim, 20ms after a look back: the cursor itself"},
		{1560 * time.Millisecond, 10, 31, 31, 10, "after a full claim, 60ms after the last look back: the cursor of 1s ago"},
		{1570 * time.Millisecond, 10, 0, -1, 10, "after a short claim, 10ms after a look back: the cursor of 1s ago"},
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		p, got := after(now)
		if got != s.want {
			t.Fatalf("at +%s (%s): claim scans from %d, want %d", s.at, s.why, got, s.want)
		}
		claimed(p, s.from, s.to, s.limit, now)
	}
}

// TestSweepFindingABacklogRewindsTheCursor checks that a sweep that finds as
// many jobs behind the cursor as it may collect moves the cursor back to the
// first of them, and that a claim planned before then does not move it
// forward again.
func TestSweepFindingABacklogRewindsTheCursor(t *testing.T) {
	t.Parallel()
	cs := newCursors(time.Second)
	queues, kinds := []string{"q"}, []string{"k"}
	t0 := time.Unix(1_000_000, 0)
	p := cs.plan(queues, kinds, t0)
	jobs := []*core.Job{{Queue: "q"}}
	cs.advance(p, jobs, []int64{5000}, 10, t0)

	// This claim is in flight while its sweep runs.
	stale := cs.plan(queues, kinds, t0.Add(2*time.Second))
	key := cursorKey{"q", 0, "k"}
	behind := make([]int64, maxStragglers)
	for i := range behind {
		behind[i] = int64(1000 + i)
	}
	sw := stale.sweeps
	if len(sw) != 1 {
		t.Fatalf("want one sweep due, got %d", len(sw))
	}
	cs.swept(sw[0], map[cursorKey][]int64{key: behind}, t0.Add(3*time.Second), time.Millisecond)
	cs.advance(stale, jobs, []int64{6000}, 10, t0.Add(3*time.Second))

	p = cs.plan(queues, kinds, t0.Add(4*time.Second))
	for i := range p.queues {
		if p.priorities[i] != 0 {
			continue
		}
		if p.upto[i] != math.MaxInt64 {
			t.Fatalf("range (%d, %d]: the backlog should be claimed by the cursor's range, not one straggler at a time", p.after[i], p.upto[i])
		}
		if p.after[i] != 999 {
			t.Fatalf("claim scans from %d after a sweep found a backlog from 1000, want 999", p.after[i])
		}
	}

	// A sweep that finds fewer leaves the cursor and hands the jobs out
	// one range each.
	cs2 := newCursors(time.Second)
	p = cs2.plan(queues, kinds, t0)
	cs2.advance(p, jobs, []int64{5000}, 10, t0)
	sw = cs2.plan(queues, kinds, t0.Add(3*time.Second)).sweeps
	cs2.swept(sw[0], map[cursorKey][]int64{key: {1000, 1001}}, t0.Add(3*time.Second), time.Millisecond)
	p = cs2.plan(queues, kinds, t0.Add(4*time.Second))
	var singles int
	for i := range p.queues {
		if p.priorities[i] == 0 && p.upto[i] == p.after[i]+1 {
			singles++
		}
	}
	if singles != 2 {
		t.Fatalf("want the two stragglers as single-job ranges, got %d", singles)
	}
}
