package browsertest_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket/dashboard"
)

// TestBrowserReplayTask replays a dead-letter group at 4 jobs a second (200 of them)
// from one tab; a second tab (a new page load) sees its progress on the
// Tasks page and stops it; what was replayed stays replayed, the rest
// stays dead, and nothing moves after the stop.
func TestBrowserReplayTask(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{Refresh: 300 * time.Millisecond})
	b.DeadN(t, "slow", 200, "gateway timeout")
	dead := `SELECT count(*) FROM "` + b.Schema + `".docket_jobs_dead WHERE queue = 'slow'`
	u := b.Srv.URL

	// The first page, left (about:blank) once the replay started and
	// showed progress.
	first := tab
	row := `tr[data-kind="mail"]:has(a[href*="gateway"])`
	do(t, first, "dead", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(row)))
	value(t, first, "rate", chromedp.Evaluate[bool](`(() => { document.querySelector('`+row+` input[name=rate]').value = "4"; return true })()`))
	do(t, first, "replay", chromedp.Click(css(row+` button.replay`)), chromedp.WaitVisible(css(`#confirm-count`)))
	if n := previewed(t, first); n != 200 {
		t.Fatalf("replay preview: %d, want 200", n)
	}
	start := time.Now()
	do(t, first, "confirm", chromedp.Click(css(`#confirm-yes`)), chromedp.WaitVisible(css(`#live tr.task-running`)))
	if took := time.Since(start); took > 20*time.Second { // the whole replay takes 50s
		t.Errorf("the confirmed replay held the page %v", took)
	}
	// The bar moves without a reload.
	value(t, first, "progress on the dead-letters page",
		chromedp.Poll[bool](`Number(document.querySelector('#live .task-done').textContent) > 0`, chromedp.WithPollingTimeout(10*time.Second)))
	do(t, first, "leave", chromedp.Navigate("about:blank"))

	// A second page load, in another browser: progress, then Stop.
	tab = browser(t, ctx)
	do(t, tab, "tasks", chromedp.Navigate(u+"/tasks"), chromedp.WaitVisible(css(`#tasks tr.task-running`)))
	if menu := value(t, tab, "menu", chromedp.Evaluate[string](`document.querySelector("#nav-tasks").textContent.trim()`)); menu != "Tasks 1 running" {
		t.Errorf("menu: %q", menu)
	}
	total := value(t, tab, "total", chromedp.Text(css(`#tasks .task-total`)))
	if total != "200" {
		t.Errorf("task total %q, want 200", total)
	}
	clickLive(t, tab, "stop", `#tasks tr.task-running button.stop`)
	do(t, tab, "stopped", chromedp.WaitVisible(css(`#tasks tr.task-ended`)))
	state := value(t, tab, "state", chromedp.Text(css(`#tasks .task-state`)))
	done, _ := strconv.Atoi(value(t, tab, "done", chromedp.Text(css(`#tasks .task-done`))))
	if state != "stopped" || done <= 0 || done >= 200 {
		t.Fatalf("after stop: state %q, %d done", state, done)
	}
	time.Sleep(time.Second)
	if left := count(t, ctx, b.Pool, dead); left != int64(200-done) {
		t.Errorf("after stop: %d still dead, want 200 - %d replayed", left, done)
	}
}
