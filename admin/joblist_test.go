package admin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
)

// Every state is listed from where its jobs are, filters combine, and
// keyset pages cover the selection exactly once.
func TestListJobsStatesFiltersPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// One serial key: the first is ready, the other four wait in its line.
	line := b.EnqueueN(t, 5, enqueue.Opts{Queue: "mail", Tenant: "acme", SerialKey: "acct-1"})
	b.EnqueueN(t, 3, enqueue.Opts{Queue: "mail", Delay: time.Hour})
	dead := b.deadN(t, 2, enqueue.Opts{Queue: "bulk"}, "SMTP Timeout after 30s")
	b.EnqueueN(t, 2, enqueue.Opts{})
	worker := uuid.New()
	running := b.Claim(t, worker, 1, time.Minute)
	b.EnqueueN(t, 1, enqueue.Opts{})
	done := b.Claim(t, worker, 1, time.Minute)
	if _, err := b.Q.Complete(b.Ctx, b.Pool, worker, jobtest.RunsOf(done), time.Now()); err != nil {
		t.Fatal(err)
	}
	list := func(f admin.JobFilter) admin.JobPage {
		t.Helper()
		p, err := b.ops.Jobs().List(b.Ctx, b.Pool, f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		return p
	}
	count := map[string]int{}
	for _, st := range []string{"", admin.StateScheduled, admin.StateReady, admin.StateWaiting, admin.StateRunning, admin.StateDead, admin.StateCompleted} {
		for _, j := range list(admin.JobFilter{State: st}).Jobs {
			if st != "" && j.State != st {
				t.Errorf("state %q lists a %s job", st, j.State)
			}
			if j.Payload != nil {
				t.Errorf("a listed job carries its payload")
			}
			count[st]++
		}
	}
	want := map[string]int{"": 5 + 3 + 1 + 1, "scheduled": 3, "ready": 1 + 1, "waiting": 4, "running": 1, "dead": 2, "completed": 1}
	for st, n := range want {
		if count[st] != n {
			t.Errorf("state %q: %d jobs, want %d", st, count[st], n)
		}
	}

	p := list(admin.JobFilter{Queue: "mail", Tenant: "acme", SerialKey: "acct-1", State: admin.StateWaiting})
	if len(p.Jobs) != 4 || p.Jobs[0].ID != line[4] || p.Next != 0 {
		t.Errorf("filtered: %d jobs, first %d, next %d; want 4, %d, 0", len(p.Jobs), p.Jobs[0].ID, p.Next, line[4])
	}
	if p := list(admin.JobFilter{SerialKey: "acct-1", State: admin.StateReady}); len(p.Jobs) != 1 || p.Jobs[0].ID != line[0] {
		t.Errorf("the ready job of key acct-1: got %d jobs, want only the head %d", len(p.Jobs), line[0])
	}
	if p := list(admin.JobFilter{State: admin.StateDead, ErrorContains: "smtp timeout"}); len(p.Jobs) != 2 || p.Jobs[0].ID != dead[1] || p.Jobs[0].Reason != admin.ReasonExhausted {
		t.Errorf("error text on dead jobs: %+v", p.Jobs)
	}
	if p := list(admin.JobFilter{Kind: "other"}); len(p.Jobs) != 0 {
		t.Errorf("unknown kind lists %d jobs", len(p.Jobs))
	}

	// Pages of 2 over the 10 live jobs: 5 pages, newest first, no overlap.
	var seen []int64
	f := admin.JobFilter{Limit: 2}
	for pages := 0; ; pages++ {
		p := list(f)
		for _, j := range p.Jobs {
			if len(seen) > 0 && j.ID >= seen[len(seen)-1] {
				t.Fatalf("page %d: id %d after %d", pages, j.ID, seen[len(seen)-1])
			}
			seen = append(seen, j.ID)
		}
		if p.Next == 0 {
			if pages != 4 {
				t.Errorf("%d pages, want 5", pages+1)
			}
			break
		}
		f.After = p.Next
	}
	if len(seen) != 10 {
		t.Errorf("pages covered %d jobs, want 10", len(seen))
	}

	// The job page: live (with its worker), dead, completed, unknown.
	j, err := b.ops.Jobs().Get(b.Ctx, b.Pool, running[0].ID, false)
	if err != nil || j.State != admin.StateRunning || j.LockedBy != worker || j.StartedAt.IsZero() || j.LeaseUntil.IsZero() || j.Payload != nil {
		t.Errorf("running job: %+v %v", j, err)
	}
	if j, err := b.ops.Jobs().Get(b.Ctx, b.Pool, dead[0], true); err != nil || j.State != admin.StateDead ||
		!strings.Contains(j.LastError, "Timeout") || j.FinishedAt.IsZero() || !strings.Contains(string(j.Payload), `"n"`) {
		t.Errorf("dead job: %+v %v", j, err)
	}
	if j, err := b.ops.Jobs().Get(b.Ctx, b.Pool, done[0].ID, false); err != nil || j.State != admin.StateCompleted || j.FinishedAt.IsZero() {
		t.Errorf("completed job: %+v %v", j, err)
	}
	if _, err := b.ops.Jobs().Get(b.Ctx, b.Pool, 1<<40, false); !errors.Is(err, admin.ErrJobNotFound) {
		t.Errorf("unknown job: %v", err)
	}
}

// A filtered page bounded by Scan stops after that many jobs of its state
// without filling up, says so, and its Next leads below them to the
// matches further down; an unbounded filter or an unfiltered page ignores
// Scan.
func TestListJobsScanBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	match := b.EnqueueN(t, 3, enqueue.Opts{Queue: "rare"})
	b.EnqueueN(t, 25, enqueue.Opts{Queue: "mail"})
	list := func(f admin.JobFilter) admin.JobPage {
		t.Helper()
		p, err := b.ops.Jobs().List(b.Ctx, b.Pool, f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		return p
	}
	f := admin.JobFilter{State: admin.StateReady, Queue: "rare", Scan: 10}
	var pages, found int
	for ; pages < 10; pages++ {
		p := list(f)
		found += len(p.Jobs)
		if p.Next == 0 {
			if p.Scanned {
				t.Errorf("the last page says it stopped at the bound")
			}
			break
		}
		if len(p.Jobs) == 0 && !p.Scanned {
			t.Errorf("page %d: empty, not said bounded, next %d", pages, p.Next)
		}
		f.After = p.Next
	}
	// 28 ready jobs, the 3 matches oldest: pages over ids 28..19, 18..9,
	// then the last 8 (fewer than the bound: no floor) with the 3 matches.
	if found != 3 || pages != 2 {
		t.Errorf("found %d matches in %d pages, want 3 in 3", found, pages+1)
	}
	if p := list(admin.JobFilter{State: admin.StateReady, Queue: "rare"}); len(p.Jobs) != 3 || p.Jobs[2].ID != match[0] || p.Scanned {
		t.Errorf("unbounded: %d jobs, scanned %v", len(p.Jobs), p.Scanned)
	}
	if p := list(admin.JobFilter{State: admin.StateReady, Scan: 5}); len(p.Jobs) != 28 || p.Scanned {
		t.Errorf("no filter but the state: %d jobs, scanned %v; want all 28", len(p.Jobs), p.Scanned)
	}
}

func TestListJobsRejectsBadFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, f := range []admin.JobFilter{
		{State: "finished"},
		{Limit: admin.MaxJobPage + 1},
		{Limit: -1},
		{After: -5},
		{Scan: -1},
		{State: admin.StateCompleted, ErrorContains: "x"},
		{Kind: "bad\x00kind"},
		{Queue: string([]byte{0xff, 0xfe})},
	} {
		if _, err := b.ops.Jobs().List(b.Ctx, b.Pool, f); !errors.Is(err, admin.ErrInvalidFilter) {
			t.Errorf("%+v: %v, want ErrInvalidFilter", f, err)
		}
	}
}

// Jobs.Delete removes waiting and dead jobs for good and never a running one.
func TestDeleteJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	waiting := b.EnqueueN(t, 1, enqueue.Opts{Queue: "mail", Delay: time.Hour})[0]
	dead := b.deadN(t, 1, enqueue.Opts{Queue: "bulk"}, "boom")[0]
	b.EnqueueN(t, 1, enqueue.Opts{})
	running := b.Claim(t, uuid.New(), 1, time.Minute)[0].ID
	for _, id := range []int64{waiting, dead} {
		if err := b.ops.Jobs().Delete(b.Ctx, b.Pool, id); err != nil {
			t.Fatalf("delete %d: %v", id, err)
		}
		if _, err := b.ops.Jobs().Get(b.Ctx, b.Pool, id, false); !errors.Is(err, admin.ErrJobNotFound) {
			t.Errorf("deleted job %d still found: %v", id, err)
		}
	}
	if err := b.ops.Jobs().Delete(b.Ctx, b.Pool, running); !errors.Is(err, admin.ErrJobRunning) {
		t.Errorf("delete running: %v", err)
	}
	if j, err := b.ops.Jobs().Get(b.Ctx, b.Pool, running, false); err != nil || j.State != admin.StateRunning {
		t.Errorf("running job after refused delete: %+v %v", j, err)
	}
	if err := b.ops.Jobs().Delete(b.Ctx, b.Pool, dead); !errors.Is(err, admin.ErrJobNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	s, err := b.ops.Status(b.Ctx, b.Pool, admin.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range s.Queues {
		if q.Queue == "bulk" && (q.DLQSize != 0 || q.DLQDelta24h != 0) {
			t.Errorf("bulk DLQ after deleting its dead job: size %d delta %d", q.DLQSize, q.DLQDelta24h)
		}
	}
}

// Dead jobs group by kind and exact error, a group's filter selects exactly
// its jobs (wildcards in the error included), and throughput counts the
// minute's completions and deaths.
func TestDeadGroupsAndThroughput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadN(t, 3, enqueue.Opts{}, "disk 100% full_now")
	b.deadN(t, 1, enqueue.Opts{}, "disk 1000 fullXnow")
	worker := uuid.New()
	b.EnqueueN(t, 2, enqueue.Opts{})
	done := b.Claim(t, worker, 2, time.Minute)
	if _, err := b.Q.Complete(b.Ctx, b.Pool, worker, jobtest.RunsOf(done), time.Now()); err != nil {
		t.Fatal(err)
	}
	groups, err := b.ops.DeadLetters().Groups(b.Ctx, b.Pool, 10)
	if err != nil || len(groups) != 2 || groups[0].Jobs != 3 || groups[0].Error != "disk 100% full_now" || groups[0].Queue != "default" {
		t.Fatalf("groups: %+v %v", groups, err)
	}
	f, ok := groups[0].Filter()
	if !ok {
		t.Fatal("group with an error has no filter")
	}
	if dead, err := b.ops.DeadLetters().List(b.Ctx, b.Pool, f); err != nil || len(dead) != 3 {
		t.Errorf("the group's filter selects %d jobs (%v), want 3", len(dead), err)
	}
	stats, err := b.ops.Throughput(b.Ctx, b.Pool, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var completed, dead int64
	for _, m := range stats {
		completed += m.Completed
		dead += m.Dead
	}
	if completed != 2 || dead != 4 {
		t.Errorf("throughput: %d completed, %d dead; want 2 and 4 (%+v)", completed, dead, stats)
	}
}
