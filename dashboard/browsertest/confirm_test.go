package browsertest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
)

// count reads a number from SQL.
func count(t *testing.T, ctx context.Context, db admin.DB, sql string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// previewed reads the confirmation page's count.
func previewed(t *testing.T, tab context.Context) int64 {
	t.Helper()
	s := value(t, tab, "confirm count", chromedp.Text(css(`#confirm-count`)))
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		t.Fatalf("confirm count %q: %v", s, err)
	}
	return n
}

// TestBrowserConfirm: a destructive action shows how many rows it will
// touch and changes nothing until its confirmation is accepted; declining
// leaves the database as it was, accepting changes exactly the count shown.
func TestBrowserConfirm(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{})
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := cl.Enqueue(ctx, b.Pool, mail{To: secret}, docket.Opts{Queue: "mail"}); err != nil {
			t.Fatal(err)
		}
	}
	live := `SELECT count(*) FROM "` + b.Schema + `".docket_jobs WHERE queue = 'mail'`
	dead := `SELECT count(*) FROM "` + b.Schema + `".docket_jobs_dead`
	u := b.Srv.URL
	selectAll := chromedp.Evaluate[bool](`(() => { document.querySelectorAll('#jobs input[type=checkbox]').forEach(c => c.checked = true); return true })()`)

	// Bulk delete of the mail queue's jobs, declined.
	before := count(t, ctx, b.Pool, live)
	do(t, tab, "jobs", chromedp.Navigate(u+"/jobs?queue=mail"), chromedp.WaitVisible(css(`#jobs`)))
	value(t, tab, "select all", selectAll)
	do(t, tab, "delete", chromedp.Click(css(`#bulk button[value="delete"]`)), chromedp.WaitVisible(css(`#confirm-count`)))
	n := previewed(t, tab)
	if n != before || n != 7 {
		t.Fatalf("delete preview: %d, want the %d mail jobs", n, before)
	}
	do(t, tab, "decline", chromedp.Click(css(`#confirm-no`)), chromedp.WaitVisible(css(`#jobs`)))
	if got := count(t, ctx, b.Pool, live); got != before {
		t.Fatalf("declined delete: %d mail jobs, want %d", got, before)
	}
	// Accepted: exactly the previewed number is gone.
	value(t, tab, "select all", selectAll)
	do(t, tab, "delete", chromedp.Click(css(`#bulk button[value="delete"]`)), chromedp.WaitVisible(css(`#confirm-count`)))
	n = previewed(t, tab)
	do(t, tab, "confirm", chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`.msg`)))
	if got := count(t, ctx, b.Pool, live); got != before-n {
		t.Errorf("confirmed delete: %d mail jobs left, want %d - %d", got, before, n)
	}
	if msg := value(t, tab, "message", chromedp.Text(css(`.msg`))); msg != "deleted 7 jobs" {
		t.Errorf("message %q", msg)
	}

	// A dead-letter group's discard: declined, then accepted.
	deadBefore := count(t, ctx, b.Pool, dead)
	do(t, tab, "dead", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(`tr[data-kind="mail"] button.discard`)),
		chromedp.Click(css(`tr[data-kind="mail"] button.discard`)), chromedp.WaitVisible(css(`#confirm-count`)))
	n = previewed(t, tab)
	do(t, tab, "decline", chromedp.Click(css(`#confirm-no`)), chromedp.WaitVisible(css(`#groups`)))
	if got := count(t, ctx, b.Pool, dead); got != deadBefore || n != 1 {
		t.Fatalf("declined discard: %d dead (was %d), preview %d", got, deadBefore, n)
	}
	do(t, tab, "discard", chromedp.Click(css(`tr[data-kind="mail"] button.discard`)), chromedp.WaitVisible(css(`#confirm-count`)),
		chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`.msg`)))
	if got := count(t, ctx, b.Pool, dead); got != deadBefore-n {
		t.Errorf("confirmed discard: %d dead letters, want %d", got, deadBefore-n)
	}

	// Delete from a job's page: confirmed, then the jobs list says so.
	e, err := cl.Enqueue(ctx, b.Pool, mail{To: secret}, docket.Opts{Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	do(t, tab, "job page", chromedp.Navigate(u+"/jobs/"+strconv.FormatInt(e.ID, 10)), chromedp.WaitVisible(css(`#delete`)),
		chromedp.Click(css(`#delete`)), chromedp.WaitVisible(css(`#confirm-count`)))
	if n := previewed(t, tab); n != 1 {
		t.Errorf("job page delete preview: %d", n)
	}
	do(t, tab, "confirm", chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`.msg`)))
	loc := value(t, tab, "location", chromedp.Evaluate[string](`location.pathname + location.search`))
	msg := value(t, tab, "message", chromedp.Text(css(`.msg`)))
	if loc != "/jobs?msg=deleted+1+job" || msg != "deleted 1 job" {
		t.Errorf("after delete from the job page: at %q, message %q", loc, msg)
	}
	if s, _ := b.Ops.Jobs().States(ctx, b.Pool, []int64{e.ID}); len(s) != 0 {
		t.Errorf("job %d not deleted: %v", e.ID, s)
	}
}

// TestBrowserApplyToAllMatching cancels every one of 10,000 jobs a filter
// matches, across all its pages: the confirmation counts 10,000, declining
// changes nothing, accepting cancels exactly 10,000 and no other job.
func TestBrowserApplyToAllMatching(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{})
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]docket.Item, 10_000)
	for i := range items {
		items[i] = docket.Item{Args: mail{To: "x"}, Opts: docket.Opts{Queue: "bulk"}}
	}
	if _, err := cl.EnqueueMany(ctx, b.Pool, items); err != nil {
		t.Fatal(err)
	}
	ready := `SELECT count(*) FROM "` + b.Schema + `".docket_jobs WHERE queue = 'bulk'`
	cancelled := `SELECT count(*) FROM "` + b.Schema + `".docket_jobs_dead WHERE queue = 'bulk' AND reason = 'cancelled'`
	others := `SELECT count(*) FROM "` + b.Schema + `".docket_jobs WHERE queue <> 'bulk'`
	othersBefore := count(t, ctx, b.Pool, others)

	open := chromedp.Steps(chromedp.Navigate(b.Srv.URL+"/jobs?state=ready&queue=bulk"), chromedp.WaitVisible(css(`#matching`)),
		chromedp.Click(css(`#matching button[value="cancel"]`)), chromedp.WaitVisible(css(`#confirm-count`)))
	do(t, tab, "cancel all", open)
	if n := previewed(t, tab); n != 10_000 {
		t.Fatalf("preview: %d, want 10,000", n)
	}
	do(t, tab, "decline", chromedp.Click(css(`#confirm-no`)), chromedp.WaitVisible(css(`#jobs`)))
	if n := count(t, ctx, b.Pool, ready); n != 10_000 {
		t.Fatalf("declined: %d jobs left of 10,000", n)
	}
	do(t, tab, "cancel all", open)
	n := previewed(t, tab)
	start := time.Now()
	do(t, tab, "confirm", chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`.msg`)))
	took := time.Since(start)
	if got := count(t, ctx, b.Pool, cancelled); got != n {
		t.Errorf("cancelled %d jobs, previewed %d", got, n)
	}
	if got := count(t, ctx, b.Pool, ready); got != 0 {
		t.Errorf("%d bulk jobs left", got)
	}
	if got := count(t, ctx, b.Pool, others); got != othersBefore {
		t.Errorf("other queues: %d jobs, were %d", got, othersBefore)
	}
	msg := value(t, tab, "message", chromedp.Text(css(`.msg`)))
	if msg != "cancelled 10,000 jobs of the 10,000 matching" {
		t.Errorf("message %q", msg)
	}
	t.Logf("cancelled 10,000 matching jobs in %v (10 statements of 1,000)", took)
}
