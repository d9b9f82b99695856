package browsertest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket/dashboard"
)

// TestBrowserNoConsoleErrors opens every page, a confirmation and an
// error page, lets their live parts poll, and fails on any console
// message of level warning or error and any exception: a missing favicon,
// a script refused by the Content-Security-Policy, a failed poll.
func TestBrowserNoConsoleErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{Refresh: 200 * time.Millisecond, ShowPayloads: true})
	b.DeadN(t, "bounce", 3, "smtp: 421 try later")
	wf := b.Workflow(t)

	u := b.Srv.URL
	listen, stop := context.WithCancel(tab)
	var mu sync.Mutex
	var bad, all []string
	messages := chromedp.Console(listen)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, m.String())
			// The error pages' own 404 is the answer asked for.
			expected := m.URL == u+"/jobs/999999" || m.URL == u+"/nowhere"
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException()) && !expected {
				bad = append(bad, fmt.Sprintf("%s (%s)", m, m.URL))
			}
			mu.Unlock()
		}
	}()
	pages := []string{"/", "/jobs", "/jobs?state=dead", fmt.Sprintf("/jobs/%d", b.Ready), fmt.Sprintf("/jobs/%d", b.Running),
		fmt.Sprintf("/jobs/%d", b.Dead), "/dead", "/schedules", "/workers", "/tasks", "/jobs/999999", "/nowhere",
		"/limits", "/workflows", fmt.Sprintf("/workflows/%d", wf.ID), fmt.Sprintf("/jobs/%d", wf.Jobs["spawn"])}
	for _, p := range pages {
		do(t, tab, p, chromedp.Navigate(u+p), chromedp.WaitReady(css(`main`)))
		time.Sleep(700 * time.Millisecond) // a few polls of the live parts
	}
	// A confirmation page.
	do(t, tab, "confirm", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(`button.discard`)),
		chromedp.Click(css(`button.discard`)), chromedp.WaitVisible(css(`#confirm-count`)))
	time.Sleep(300 * time.Millisecond)
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("console errors on the pages %v:\n%q", pages, bad)
	}
	t.Logf("%d console messages: %q", len(all), all)
}
