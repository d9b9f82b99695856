package browsertest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
)

// TestBrowserCountsQueuesSchedulesWorkers reads, in Chromium, the numbers
// an operator acts on, from seeded jobs whose numbers are known: the jobs
// page's counts by state, each a link to the list of those jobs; the
// overview's cards and queue columns (scheduled, done 1h, dead letters),
// whose links lead to the matching list; each schedule's last outcome
// and a paused schedule's "paused"; and a live worker's busy slots and
// running jobs, each linked to its page.
func TestBrowserCountsQueuesSchedulesWorkers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{}) // mail: 1 ready; bounce: 1 running, 1 dead
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(b.Schema, queue.Config{})
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := b.Pool.Exec(ctx, strings.ReplaceAll(sql, "{{schema}}", `"`+b.Schema+`"`), args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	enqueue := func(queueName string, opts docket.Opts) int64 {
		t.Helper()
		opts.Queue = queueName
		e, err := cl.Enqueue(ctx, b.Pool, mail{To: "x"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	claim := func(worker uuid.UUID, queueName string, n int) []queue.Run {
		t.Helper()
		jobs, err := q.Claim(ctx, b.Pool, queue.ClaimParams{Worker: worker, Queues: []string{queueName}, Kinds: []string{"mail"}, Limit: n, Lease: time.Hour})
		if err != nil || len(jobs) != n {
			t.Fatalf("claim %d in %s: %d %v", n, queueName, len(jobs), err)
		}
		runs := make([]queue.Run, n)
		for i, j := range jobs {
			runs[i] = queue.RunOf(j)
		}
		return runs
	}
	// Queue mail: 1 ready (setup) and 3 scheduled.
	for range 3 {
		enqueue("mail", docket.Opts{Delay: time.Hour})
	}
	// Queue history: 2 completed in the last hour.
	enqueue("history", docket.Opts{})
	enqueue("history", docket.Opts{})
	finisher := uuid.New()
	if _, err := q.Complete(ctx, b.Pool, finisher, claim(finisher, "history", 2), time.Now()); err != nil {
		t.Fatal(err)
	}
	// Queue bounce: 2 more dead letters, dead two days ago (3 in all, 1
	// of them in the last hour).
	enqueue("bounce", docket.Opts{})
	enqueue("bounce", docket.Opts{})
	var dead []queue.Dead
	for _, r := range claim(finisher, "bounce", 2) {
		dead = append(dead, queue.Dead{Run: r, Reason: admin.ReasonExhausted, Error: "smtp: 550"})
	}
	if _, err := q.DeadLetter(ctx, b.Pool, finisher, dead); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE {{schema}}.docket_jobs_dead SET dead_at = now() - interval '2 days' WHERE id = ANY($1)`, []int64{dead[0].ID, dead[1].ID})
	// A live worker with 4 slots running 2 jobs of queue work.
	worker := uuid.New()
	if err := q.RegisterWorker(ctx, b.Pool, queue.WorkerInfo{ID: worker, Host: "h", PID: 7, Kinds: []string{"mail"}, Queues: []string{"work"}, Slots: 4, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	enqueue("work", docket.Opts{})
	enqueue("work", docket.Opts{})
	working := claim(worker, "work", 2)
	// Schedules: one paused (with a next fire), one whose last run died,
	// one whose run of its last fire is running, one whose last run
	// completed.
	exec(`INSERT INTO {{schema}}.docket_schedules (name, spec, kind, queue, payload, paused, next_fire, last_fire) VALUES
		('a-paused', '@hourly', 'mail', 'sched', '{}', true, now() + interval '1 hour', NULL),
		('b-dead', '@hourly', 'mail', 'sched', '{}', false, now() + interval '1 hour', now() - interval '10 minutes'),
		('c-running', '@hourly', 'mail', 'sched', '{}', false, now() - interval '1 minute', now() - interval '61 minutes'),
		('d-completed', '@hourly', 'mail', 'sched', '{}', false, now() + interval '1 hour', now() - interval '10 minutes')`)
	schedDead := enqueue("sched", docket.Opts{UniqueKey: "schedule:b-dead"})
	schedRunning := enqueue("sched", docket.Opts{UniqueKey: "schedule:c-running"})
	runs := claim(finisher, "sched", 2)
	if _, err := q.DeadLetter(ctx, b.Pool, finisher, []queue.Dead{{Run: runs[0], Reason: admin.ReasonExhausted, Error: "report failed"}}); err != nil {
		t.Fatal(err)
	}
	if runs[0].ID != schedDead || runs[1].ID != schedRunning {
		t.Fatalf("claimed %d, %d; want %d, %d", runs[0].ID, runs[1].ID, schedDead, schedRunning)
	}

	text := func(sel string) string {
		t.Helper()
		return strings.Join(strings.Fields(liveText(t, tab, sel)), " ")
	}
	rows := func() int {
		t.Helper()
		return value(t, tab, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#jobs tbody tr[data-id]").length`))
	}
	check := func(page string, want map[string]string) {
		t.Helper()
		for sel, w := range want {
			if got := text(sel); got != w {
				t.Errorf("%s: %s: %q, want %q", page, sel, got, w)
			}
		}
	}
	url := func() string { return value(t, tab, "url", chromedp.Location()) }

	// The jobs page of queue mail: counts by state, and their links.
	do(t, tab, "jobs of mail", chromedp.Navigate(b.Srv.URL+"/jobs?queue=mail"), chromedp.WaitVisible(css(`#counts`)))
	check("jobs of mail", map[string]string{
		`#counts a[data-state=""]`:          "4 live in total",
		`#counts a[data-state="scheduled"]`: "3 scheduled",
		`#counts a[data-state="ready"]`:     "1 ready",
		`#counts a[data-state="running"]`:   "0 running",
		`#counts a[data-state="dead"]`:      "0 dead",
	})
	if rows() != 4 {
		t.Errorf("jobs of mail: %d rows, want 4", rows())
	}
	do(t, tab, "scheduled card", chromedp.Click(css(`#counts a[data-state="scheduled"]`)), chromedp.WaitVisible(css(`#counts a.current[data-state="scheduled"]`)))
	if u := url(); !strings.HasSuffix(u, "/jobs?queue=mail&state=scheduled") {
		t.Errorf("the scheduled card leads to %s", u)
	}
	if n := rows(); n != 3 || value(t, tab, "states", chromedp.Evaluate[int](`document.querySelectorAll("#jobs tr.state-scheduled").length`)) != 3 {
		t.Errorf("scheduled jobs of mail: %d rows, want 3 scheduled", n)
	}

	// The overview: its queue columns, and links to the lists.
	do(t, tab, "overview", chromedp.Navigate(b.Srv.URL+"/"), chromedp.WaitVisible(css(`tr[data-queue="bounce"]`)))
	check("overview", map[string]string{
		`tr[data-queue="mail"] td.ready`:        "1",
		`tr[data-queue="mail"] td.scheduled`:    "3",
		`tr[data-queue="history"] td.done`:      "2",
		`tr[data-queue="history"] td.done1h`:    "2",
		`tr[data-queue="bounce"] td.dead`:       "1",
		`tr[data-queue="bounce"] td.dlq`:        "3",
		`tr[data-queue="bounce"] td.scheduled`:  "0",
		`tr[data-queue="work"] td.running`:      "2",
		`#total-scheduled`:                      "3",
		`#total-completed`:                      "2",
		`#total-dlq`:                            "4", // bounce 3, sched 1
		`#total-workers`:                        "1",
		`#workers-label`:                        "live worker",
		`#total-running`:                        "4", // bounce 1, work 2, sched 1
		`tr[data-queue="sched"] td.dlq`:         "1",
		`tr[data-queue="history"] td.scheduled`: "0",
	})
	clickLive(t, tab, "dead letters of bounce", `tr[data-queue="bounce"] td.dlq a`)
	do(t, tab, "dead of bounce", chromedp.WaitVisible(css(`#counts a.current[data-state="dead"]`)))
	if u := url(); !strings.HasSuffix(u, "/jobs?state=dead&queue=bounce") || rows() != 3 {
		t.Errorf("the dead letters of bounce lead to %s with %d rows, want 3", u, rows())
	}
	do(t, tab, "overview", chromedp.Navigate(b.Srv.URL+"/"), chromedp.WaitVisible(css(`#total-scheduled`)))
	clickLive(t, tab, "scheduled card", `a.card:has(#total-scheduled)`)
	do(t, tab, "scheduled", chromedp.WaitVisible(css(`#counts a.current[data-state="scheduled"]`)))
	if u := url(); !strings.HasSuffix(u, "/jobs?state=scheduled") || rows() != 3 {
		t.Errorf("the scheduled card leads to %s with %d rows, want 3", u, rows())
	}

	// Schedules: last outcomes, and paused.
	do(t, tab, "schedules", chromedp.Navigate(b.Srv.URL+"/schedules"), chromedp.WaitVisible(css(`#schedules`)))
	check("schedules", map[string]string{
		`tr[data-name="a-paused"] td.next`:    "paused",
		`tr[data-name="a-paused"] td.outcome`: "–",
	})
	for name, want := range map[string][]string{
		"b-dead":      {"dead", fmt.Sprintf("job %d", schedDead), "report failed"},
		"c-running":   {"running", fmt.Sprintf("job %d", schedRunning), "since"},
		"d-completed": {"completed", "run of"},
	} {
		got := text(`tr[data-name="` + name + `"] td.outcome`)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("schedule %s: last outcome %q, want it to say %q", name, got, w)
			}
		}
	}
	if got := text(`tr[data-name="b-dead"] td.next`); got == "paused" || got == "–" {
		t.Errorf("an active schedule's next fire: %q", got)
	}

	// Workers: busy slots and running jobs, linked.
	do(t, tab, "workers", chromedp.Navigate(b.Srv.URL+"/workers"), chromedp.WaitVisible(css(`#workers`)))
	row := fmt.Sprintf(`tr.running-jobs[data-worker="%s"]`, worker)
	got := text(row)
	for _, r := range working {
		if !strings.Contains(got, fmt.Sprintf("mail %d for", r.ID)) {
			t.Errorf("worker's running jobs %q lack job %d", got, r.ID)
		}
	}
	if n := value(t, tab, "links", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('%s a[href^="jobs/"]').length`, row))); n != 2 {
		t.Errorf("worker's running jobs: %d links, want 2", n)
	}
	slots := text(fmt.Sprintf(`tr:has(+ %s) td.slots`, row))
	if slots != "2 / 4" {
		t.Errorf("busy / slots: %q, want \"2 / 4\"", slots)
	}
	clickLive(t, tab, "a running job", row+` a`)
	do(t, tab, "job page", chromedp.WaitVisible(css(`main h1`)))
	if u := url(); !strings.HasSuffix(u, fmt.Sprintf("/jobs/%d", working[0].ID)) {
		t.Errorf("the running job's link leads to %s", u)
	}
}
