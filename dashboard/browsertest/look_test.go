package browsertest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/docketq/docket/dashboard"
)

// colorScheme emulates the system's prefers-color-scheme ("dark",
// "light", or "" for the browser's own).
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		p := emulation.SetEmulatedMediaParams{}
		if scheme != "" {
			p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
		}
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, p)
		return err
	})
}

// overflowJS says how far the page is wider than the window, and which
// elements stick out, or "" when nothing does.
const overflowJS = `(() => {
	const doc = document.documentElement, over = doc.scrollWidth - doc.clientWidth;
	if (over <= 0) return "";
	const out = [];
	for (const e of document.querySelectorAll("body *")) {
		const r = e.getBoundingClientRect();
		if (r.right > doc.clientWidth + 1 && !e.closest(".scroll")) out.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "") + " to " + Math.round(r.right));
		if (out.length == 5) break;
	}
	return over + " px too wide: " + out.join(", ");
})()`

// TestBrowserLayoutAndDarkMode opens every page of the dashboard (each
// route that serves HTML, a confirmation and an error page) at 1280 and
// at 390 px, light and dark: the page is never wider than the window (a
// wide table scrolls in its own box), dark mode follows
// prefers-color-scheme, and no page logs a console error. The chart
// shows UTC to a browser in New York, legend included, and follows the
// window's width.
func TestBrowserLayoutAndDarkMode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tab := browser(t, ctx, chromedp.Env("TZ=America/New_York"))
	b := setup(t, dashboard.Config{Refresh: 500 * time.Millisecond, ShowPayloads: true})
	// Long words that do not wrap: an error, a queue name.
	b.DeadN(t, "bounce", 3, "smtp: 421 "+strings.Repeat("relay-unavailable-", 20)+" try later")
	b.DeadN(t, "a-queue-with-a-very-long-name-"+strings.Repeat("x", 60), 1, "x")
	wf := b.Workflow(t)
	u := b.Srv.URL

	var mu sync.Mutex
	var bad []string
	listen, stop := context.WithCancel(tab)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(listen) {
			if err != nil {
				return
			}
			// The error pages' own 404 is the answer asked for.
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException()) && !strings.HasSuffix(m.URL, "/nowhere") {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s (%s)", m, m.URL))
				mu.Unlock()
			}
		}
	}()

	pages := []string{"/", "/jobs", "/jobs?state=dead", fmt.Sprintf("/jobs/%d", b.Ready), fmt.Sprintf("/jobs/%d", b.Running),
		fmt.Sprintf("/jobs/%d", b.Dead), "/dead", "/schedules", "/workers", "/tasks", "/limits", "/workflows", fmt.Sprintf("/workflows/%d", wf.ID), "/nowhere", "confirm"}
	open := func(p string) {
		t.Helper()
		if p == "confirm" {
			do(t, tab, "confirm", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(`button.discard`)),
				chromedp.Click(css(`button.discard`)), chromedp.WaitVisible(css(`#confirm-count`)))
			return
		}
		do(t, tab, p, chromedp.Navigate(u+p), chromedp.WaitReady(css(`main`)))
	}
	background := func() string {
		return value(t, tab, "background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor + " " + getComputedStyle(document.querySelector("table, .error, .confirm, dl") || document.body).backgroundColor`))
	}
	for _, width := range []int64{1280, 390} {
		do(t, tab, "viewport", chromedp.EmulateViewport(width, 860))
		for _, p := range pages {
			light := ""
			for _, scheme := range []string{"light", "dark"} {
				do(t, tab, scheme, colorScheme(scheme))
				open(p)
				if over := value(t, tab, "overflow", chromedp.Evaluate[string](overflowJS)); over != "" {
					t.Errorf("%s at %d px, %s: %s", p, width, scheme, over)
				}
				bg := background()
				if scheme == "light" {
					light = bg
				} else if bg == light {
					t.Errorf("%s at %d px: the same colours in dark mode as in light (%s)", p, width, bg)
				}
			}
		}
	}
	do(t, tab, "browser's own scheme", colorScheme(""))

	// The chart: UTC though the browser's zone is New York, a legend with
	// the latest minute (not "--"), as wide as its box at either width.
	for _, width := range []int64{1280, 390} {
		do(t, tab, "viewport", chromedp.EmulateViewport(width, 860))
		if width == 1280 {
			do(t, tab, "overview", chromedp.Navigate(u+"/"), chromedp.WaitVisible(css(`#chart[data-ready] canvas`)))
		}
		fits := value(t, tab, "chart width", chromedp.Poll[bool](`(() => {
			const box = document.getElementById("chart"), c = box.querySelector(".u-wrap");
			return c.offsetWidth <= box.clientWidth && c.offsetWidth >= box.clientWidth - 40;
		})()`, chromedp.WithPollingTimeout(5*time.Second)))
		if !fits {
			t.Errorf("at %d px the chart does not follow its box", width)
		}
	}
	legend := value(t, tab, "legend", chromedp.Evaluate[string](`document.querySelector("#chart .u-legend").textContent`))
	utcNow := value(t, tab, "UTC now", chromedp.Evaluate[string](`(() => { const d = new Date(Date.now() - 60000); return [d, new Date()].map(x => x.toISOString().slice(11, 16)).join(" "); })()`))
	if strings.Contains(legend, "--") || !strings.Contains(legend, "minute (UTC)") {
		t.Errorf("chart legend: %q", legend)
	}
	if f := strings.Fields(utcNow); !strings.Contains(legend, f[0]) && !strings.Contains(legend, f[1]) {
		t.Errorf("chart legend %q does not show the latest minute in UTC (%s)", legend, utcNow)
	}

	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("console errors:\n%q", bad)
	}
}
