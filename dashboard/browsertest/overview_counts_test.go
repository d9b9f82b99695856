package browsertest_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
)

// TestBrowserOverviewCounts reads the overview's numbers in Chromium: the
// two kinds of waiting apart, counts past the limit shown as lower bounds
// ("10,000+", "at least 1,000"), words that agree with their numbers, and
// a schedule whose kind no live worker serves.
// refresh is the overview counts test's poll interval.
const refresh = 300 * time.Millisecond

func TestBrowserOverviewCounts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	pool := pgtest.PoolN(t, 4)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	cl, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(schema, queue.Config{})

	// 10,001 ready jobs that no live worker serves.
	items := make([]docket.Item, admin.OverviewLimit+1)
	for i := range items {
		items[i] = docket.Item{Args: mail{To: "x"}, Opts: docket.Opts{Queue: "bulk"}}
	}
	if _, err := cl.EnqueueMany(ctx, pool, items); err != nil {
		t.Fatal(err)
	}
	// A serial line of three (one holds the key, two wait) and a chain of
	// four workflow jobs (three wait for their parents).
	for range 3 {
		if _, err := cl.Enqueue(ctx, pool, mail{To: "x"}, docket.Opts{Queue: "lines", SerialKey: "account:1"}); err != nil {
			t.Fatal(err)
		}
	}
	chain := []docket.WorkflowJob{{Ref: "a", Args: mail{To: "x"}, Opts: docket.Opts{Queue: "flows"}}}
	for _, ref := range []string{"b", "c", "d"} {
		chain = append(chain, docket.WorkflowJob{Ref: ref, Args: mail{To: "x"}, Opts: docket.Opts{Queue: "flows"}, After: docket.After(chain[len(chain)-1].Ref)})
	}
	if _, err := cl.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "chain", Jobs: chain}); err != nil {
		t.Fatal(err)
	}
	// One dead letter, one live worker, and a schedule of a kind it does
	// not serve.
	if _, err := cl.Enqueue(ctx, pool, mail{To: "x"}, docket.Opts{Queue: "failing"}); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: w, Queues: []string{"failing"}, Kinds: []string{"mail"}, Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	if _, err := q.DeadLetter(ctx, pool, w, []queue.Dead{{Run: queue.RunOf(jobs[0]), Reason: admin.ReasonExhausted, Error: "smtp: 550"}}); err != nil {
		t.Fatal(err)
	}
	if err := q.RegisterWorker(ctx, pool, queue.WorkerInfo{ID: uuid.New(), Host: "h", PID: 1, Kinds: []string{"mail"}, Queues: []string{"mail"}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".docket_schedules (name, spec, kind, queue, payload)
		VALUES ('nightly-report', '0 2 * * *', 'report', '', '{}')`); err != nil {
		t.Fatal(err)
	}

	h, err := dashboard.Handler(pool, dashboard.Config{Schema: schema, Refresh: refresh, Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	do(t, tab, "overview", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(css(`tr[data-queue="bulk"]`)))
	text := func(sel string) string {
		t.Helper()
		return liveText(t, tab, sel)
	}
	for sel, want := range map[string]string{
		`#total-ready`:                        "10,002+", // 10,000+ in bulk, 1 in lines, 1 in flows
		`tr[data-queue="bulk"] td.ready`:      "10,000+",
		`#total-serial-waiting`:               "2",
		`#total-workflow-waiting`:             "3",
		`#total-dlq`:                          "1",
		`#total-dlq + span`:                   "dead letter",
		`#total-workers`:                      "1",
		`#workers-label`:                      "live worker",
		`#total-serial-waiting + span`:        "waiting in serial lines",
		`#total-workflow-waiting + span`:      "waiting for workflow parents",
		`tr[data-queue="failing"] td.dead`:    "1",
		`tr[data-queue="failing"] td.ready`:   "0",
		`tr[data-queue="lines"] td.ready`:     "1",
		`tr[data-queue="flows"] td.ready`:     "1",
		`tr[data-queue="bulk"] td.running`:    "0",
		`tr[data-queue="failing"] td.done`:    "0",
		`tr[data-queue="bulk"] td.done`:       "0",
		`tr[data-queue="bulk"] td.dead`:       "0",
		`tr[data-queue="lines"] td.running`:   "0",
		`tr[data-queue="flows"] td.running`:   "0",
		`tr[data-queue="failing"] td.running`: "0",
	} {
		if got := text(sel); got != want {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	// The warnings are one line with their count, opened on a click, and
	// stay open while the part refreshes.
	if got := text(`#warnings summary`); !regexp.MustCompile(`^5 warnings: .+ · 4 more$`).MatchString(got) {
		t.Errorf("warnings' summary: %q", got)
	}
	if open := value(t, tab, "warnings closed", chromedp.Evaluate[bool](`document.getElementById("warnings").open`)); open {
		t.Error("the warnings are open before a click")
	}
	clickLive(t, tab, "open the warnings", `#warnings summary`)
	time.Sleep(3 * refresh) // a few polls
	if open := value(t, tab, "warnings open", chromedp.Evaluate[bool](`document.getElementById("warnings").open`)); !open {
		t.Error("the warnings closed when the part refreshed")
	}
	warnings := text(`#warnings ul`)
	for _, want := range []string{
		"unserved_kind at least 1,000 ready mail jobs in queue bulk and no live worker serves them",
		"unserved_schedule schedule nightly-report: no live worker serves kind report",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
}
