package browsertest_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
)

var screenshots = flag.String("screenshots", "", "directory to write a PNG of each page to (docs/dashboard)")

type report struct {
	Tenant string `json:"tenant"`
}

func (report) Kind() string { return "report" }

// flaky fails its first run (dead-lettered: one attempt) and succeeds after.
type flaky struct {
	Order int `json:"order"`
}

func (flaky) Kind() string { return "charge_card" }

// export has no handler in this process: its queue shows a backlog.
type export struct{}

func (export) Kind() string { return "export" }

// chromium finds the browser, or skips the test saying why.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: install Debian's chromium package (apt-get install -y chromium) to run the browser tests")
	return ""
}

// browser starts headless Chromium with the flags of the issue, a fresh
// profile and any extra options, and returns a tab's context.
func browser(t *testing.T, ctx context.Context, extra ...chromedp.ExecAllocatorOption) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// TestBrowser drives the dashboard in headless Chromium against a real
// worker: counts on the overview, a filtered job list, a dead job replayed
// from its page until it completes, a queue paused from the page while its
// job waits unclaimed, and the refusals of a POST without CSRF token and
// of a request without the dashboard's token.
func TestBrowser(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	pool := pgtest.PoolN(t, 12)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}

	var charged atomic.Int32
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[mail]) error { return nil }, handlers.KindOpts{Queue: "mail"})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[report]) error { return nil }, handlers.KindOpts{Queue: "reports"})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[flaky]) error {
		if n := charged.Add(1); n <= 5 {
			return fmt.Errorf("card processor: 502 bad gateway (call %d)", n)
		}
		return nil
	}, handlers.KindOpts{Queue: "billing", MaxAttempts: 5, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	quiet := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	cl, err := docket.NewClient(pool, docket.Config{
		Schema:   schema,
		Registry: reg,
		Worker:   docket.WorkerConfig{PollInterval: 100 * time.Millisecond, Logger: quiet},
		Schedules: []schedule.Schedule{
			{Name: "nightly-report", Spec: "0 2 * * *", TimeZone: "Europe/Berlin", Args: report{Tenant: "acme"}},
			{Name: "hourly-digest", Spec: "@hourly", Args: mail{To: "digest"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cl.Stop(context.Background())
	for i := range 3 {
		if _, err := cl.Enqueue(ctx, pool, mail{To: secret}, docket.Opts{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Enqueue(ctx, pool, report{Tenant: fmt.Sprint("t", i)}, docket.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := cl.Enqueue(ctx, pool, flaky{Order: 7}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	// A queue no process serves: its jobs wait, for the overview to count.
	plain, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := plain.Enqueue(ctx, pool, export{}, docket.Opts{Queue: "exports"}); err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, ctx, ops, pool, dead.ID, admin.StateDead)

	h, err := dashboard.Handler(pool, dashboard.Config{Schema: schema, Refresh: 300 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	u := srv.URL

	// Overview: the waiting exports and the dead letter are counted.
	do(t, tab, "overview",
		chromedp.Navigate(u+"/"),
		chromedp.WaitVisible(css(`tr[data-queue="exports"]`)),
		chromedp.WaitVisible(css(`#chart[data-ready="1"]`)),
	)
	ready := liveText(t, tab, `tr[data-queue="exports"] td.ready`)
	dlq := liveText(t, tab, `#total-dlq`)
	if ready != "4" || dlq != "1" {
		t.Errorf("overview: exports ready %q, dead letters %q; want 4 and 1", ready, dlq)
	}
	shoot(t, tab, "overview")

	// Jobs: filter to dead jobs of the flaky kind.
	do(t, tab, "filter jobs",
		chromedp.Navigate(u+"/jobs"),
		chromedp.WaitVisible(css(`#jobs`)),
		chromedp.SetValue(css(`select[name="state"]`), "dead"),
		chromedp.SendKeys(css(`input[name="kind"]`), "charge_card"),
		chromedp.Click(css(`#apply`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`tr[data-id="%d"]`, dead.ID))),
	)
	rows := value(t, tab, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#jobs tbody tr").length`))
	if rows != 1 {
		t.Errorf("filtered list has %d rows, want the one dead job", rows)
	}
	do(t, tab, "completed jobs", chromedp.Navigate(u+"/jobs?state=completed"), chromedp.WaitVisible(css(`#jobs`)))
	shoot(t, tab, "jobs")

	// The dead job's page: replay it and watch it complete (live refresh).
	do(t, tab, "open dead job",
		chromedp.Navigate(u+"/jobs?state=dead&kind=charge_card"),
		chromedp.Click(css(fmt.Sprintf(`a[href="jobs/%d"]`, dead.ID))),
		chromedp.WaitVisible(css(`#job-state`)),
	)
	state := value(t, tab, "job state", chromedp.Text(css(`#job-state`)))
	lastErr := value(t, tab, "last error", chromedp.Text(css(`#last-error`)))
	if state != "dead" || !strings.Contains(lastErr, "502 bad gateway") {
		t.Errorf("dead job page: state %q, error %q", state, lastErr)
	}
	// Its 5 failed runs, each with its times, worker and error.
	attempts := value(t, tab, "attempts", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#attempts tbody tr")].map(
		r => [...r.cells].map(c => c.textContent.trim()).join(" | "))`))
	host, _ := os.Hostname()
	if len(attempts) != 5 {
		t.Errorf("dead job page lists %d attempts, want 5: %q", len(attempts), attempts)
	}
	for i, row := range attempts {
		outcome := "failed"
		if i == 4 {
			outcome = "exhausted"
		}
		cells := strings.Split(row, " | ")
		if len(cells) != 6 || cells[0] != fmt.Sprint(i+1) || cells[1] == "" || cells[2] == "" ||
			cells[3] != fmt.Sprintf("%s pid %d", host, os.Getpid()) || cells[4] != outcome ||
			cells[5] != fmt.Sprintf("card processor: 502 bad gateway (call %d)", i+1) {
			t.Errorf("attempt row %d: %q", i+1, row)
		}
	}
	shoot(t, tab, "job")
	do(t, tab, "dead letters", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(`tr[data-kind="charge_card"]`)))
	shoot(t, tab, "dead")
	do(t, tab, "dead job", chromedp.Navigate(u+fmt.Sprintf("/jobs/%d", dead.ID)), chromedp.WaitVisible(css(`#retry`)))
	clickLive(t, tab, "replay", `#retry`)
	do(t, tab, "replayed",
		chromedp.WaitVisible(css(`#job-state.state-completed`)),
		chromedp.WaitVisible(css(`#attempts tr[data-attempt="1"][data-outcome="completed"]`)),
	)
	if n := charged.Load(); n != 6 {
		t.Errorf("the flaky handler ran %d times, want 6 (failed 5 times, then replayed)", n)
	}
	// Replayed, the job keeps its 5 failed runs and adds its completion.
	if n := value(t, tab, "attempts after replay", chromedp.Evaluate[int](`document.querySelectorAll("#attempts tbody tr").length`)); n != 6 {
		t.Errorf("completed job page lists %d attempts, want 6", n)
	}

	// Pause the mail queue from the overview: a new mail job stays unclaimed.
	do(t, tab, "overview", chromedp.Navigate(u+"/"))
	clickLive(t, tab, "pause", `tr[data-queue="mail"] button[value="pause"]`)
	do(t, tab, "paused", chromedp.WaitVisible(css(`tr[data-queue="mail"] .paused`)))
	// Workers read the paused queues every poll interval (100ms here): a
	// job enqueued sooner may still be claimed, as the pause promises.
	time.Sleep(500 * time.Millisecond)
	waiting, err := cl.Enqueue(ctx, pool, mail{To: secret}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	// The overview's live part shows it waiting, without a reload.
	value(t, tab, "paused queue counts its job",
		chromedp.Poll[bool](`document.querySelector('tr[data-queue="mail"] td.ready').textContent === "1"`, chromedp.WithPollingTimeout(10*time.Second)))
	time.Sleep(time.Second) // ten poll intervals of the worker
	if j, err := ops.Jobs().Get(ctx, pool, waiting.ID, false); err != nil || j.State != admin.StateReady {
		t.Errorf("job in the paused queue: %+v %v, want still ready", j.State, err)
	}
	clickLive(t, tab, "resume", `tr[data-queue="mail"] button[value="resume"]`)
	waitState(t, ctx, ops, pool, waiting.ID, admin.StateCompleted)

	// A POST without the CSRF token is refused, from the page itself.
	status := value(t, tab, "post without csrf",
		chromedp.Evaluate[int](`fetch("queues/action", {method: "POST", body: new URLSearchParams({queue: "reports", action: "pause"})}).then(r => r.status)`,
			chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("POST without CSRF token: %d, want 403", status)
	}
	if qs, _ := ops.Queues().Paused(ctx, pool); len(qs) != 0 {
		t.Errorf("queues paused after the refused POST: %v", qs)
	}
	do(t, tab, "schedules", chromedp.Navigate(u+"/schedules"), chromedp.WaitVisible(css(`tr[data-name="nightly-report"]`)))
	shoot(t, tab, "schedules")
	do(t, tab, "workers", chromedp.Navigate(u+"/workers"), chromedp.WaitVisible(css(`#workers td code`)))
	shoot(t, tab, "workers")

	// With a token (as docket dashboard requires off loopback): refused
	// without it, let in once it is given.
	th, _ := dashboard.Handler(pool, dashboard.Config{Schema: schema, Token: "open-sesame", Logger: quiet})
	tsrv := httptest.NewServer(th)
	defer tsrv.Close()
	do(t, tab, "no token", chromedp.Navigate(tsrv.URL+"/"))
	body := value(t, tab, "401 page", chromedp.Text(css(`main`)))
	if !strings.Contains(body, "401") || !strings.Contains(body, "needs its token") {
		t.Errorf("without the token: %q", body)
	}
	do(t, tab, "token",
		chromedp.Navigate(tsrv.URL+"/?token=open-sesame"),
		chromedp.WaitVisible(css(`#queues`)),
	)
}

// TestBrowserRebinding is DNS rebinding in a real browser: Chromium
// resolves rebound.example to 127.0.0.1, as an attacker's DNS would after
// serving the attacker's page. The dashboard (no token) refuses the page
// and a same-origin POST from it, and still serves the browser on
// localhost.
func TestBrowserRebinding(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx, chromedp.Flag("host-resolver-rules", "MAP rebound.example 127.0.0.1"))
	b := setup(t, dashboard.Config{})
	_, port, _ := net.SplitHostPort(b.Srv.Listener.Addr().String())
	rebound := "http://rebound.example:" + port

	do(t, tab, "rebound page", chromedp.Navigate(rebound+"/"), chromedp.WaitReady(css("body")))
	text := value(t, tab, "rebound page text", chromedp.Text(css("body")))
	if !strings.Contains(text, "not served on this host") || csrfInput.MatchString(text) {
		t.Errorf("the page on the rebound name: %.120q, want the refusal", text)
	}
	// The attacker's script, same-origin with the rebound name: read a
	// page's CSRF token, post it back.
	attack := `fetch("/").then(r => r.text()).then(html => {
		const m = html.match(/name="csrf" value="([0-9a-f]{64})"/);
		return fetch("/queues/action", {method: "POST", body: new URLSearchParams({csrf: m ? m[1] : "", queue: "mail", action: "pause"})});
	}).then(r => r.status)`
	status := value(t, tab, "rebound post", chromedp.Evaluate[int](attack, chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("POST from the rebound page: %d, want 403", status)
	}
	if qs, err := b.Ops.Queues().Paused(b.Ctx, b.Pool); err != nil || len(qs) != 0 {
		t.Errorf("paused queues after the rebound POST: %v %v", qs, err)
	}
	do(t, tab, "localhost", chromedp.Navigate("http://localhost:"+port+"/"), chromedp.WaitVisible(css(`tr[data-queue="mail"]`)))
	if !strings.Contains(b.Log.String(), "host=rebound.example:"+port) {
		t.Errorf("the refusals are not logged with the rebound host:\n%s", b.Log)
	}
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// clickLive clicks the element sel on a page whose live part replaces its
// rows every poll: a node found by one DevTools call may be gone by the
// next, so the lookup and the click happen in one script, retried until
// the element is there.
func clickLive(t *testing.T, tab context.Context, what, sel string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel)
	value(t, tab, what, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second)))
}

// do runs steps in the tab, failing the test with the page's HTML.
func do(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	value(t, tab, what, chromedp.Steps(steps...))
}

// value runs one action in the tab and returns its result.
func value[T any](t *testing.T, tab context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	// A live part of the page (replaced every few hundred ms) can
	// replace the node between the query that found it and the read: the
	// action did nothing, so it is run again on the new node.
	for try := 0; err != nil && try < 5 && goneNode(err); try++ {
		v, err = chromedp.Run(ctx, a)
	}
	if err != nil {
		html, _ := chromedp.Run(tab, chromedp.OuterHTML(css("body")))
		t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
	return v
}

// liveText reads an element's visible text in one script: a node found by
// one DevTools call may be replaced by a live refresh before the next reads
// it, which then reads nothing (chromedp.Text is two calls).
func liveText(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText.trim() : ""; })()`, sel)
	return value(t, tab, sel, chromedp.Evaluate[string](js))
}

// goneNode says whether err is DevTools' answer about a node that a live
// part's refresh removed (it has two wordings).
func goneNode(err error) bool {
	return strings.Contains(err.Error(), "No node with given id found") || strings.Contains(err.Error(), "Could not find node with given id")
}

// shoot saves the page as PNGs for the docs when -screenshots is set:
// <name>.png in light mode and <name>-dark.png with prefers-color-scheme
// dark emulated.
func shoot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	for _, scheme := range []string{"light", "dark"} {
		do(t, tab, scheme, colorScheme(scheme))
		time.Sleep(200 * time.Millisecond) // the chart redraws in the new colours
		png := value(t, tab, "screenshot "+name, chromedp.FullScreenshot(100))
		file := name + ".png"
		if scheme == "dark" {
			file = name + "-dark.png"
		}
		if err := os.WriteFile(filepath.Join(*screenshots, file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, tab, "browser's own scheme", colorScheme(""))
}

func waitState(t *testing.T, ctx context.Context, ops *admin.Client, db admin.DB, id int64, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := ops.Jobs().Get(ctx, db, id, false)
		if err == nil && j.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: state %q (%v), want %s", id, j.State, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
