package browsertest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/docketq/docket/dashboard"
)

// polls is a dashboard server that records when each poll of a live part
// reached it, and answers them with 500 while failing is set.
type polls struct {
	mu      sync.Mutex
	at      []time.Time
	failing atomic.Bool
}

func (p *polls) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("live") == "1" {
			p.mu.Lock()
			p.at = append(p.at, time.Now())
			p.mu.Unlock()
			if p.failing.Load() {
				http.Error(w, "down for the test", http.StatusInternalServerError)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (p *polls) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.at)
}

// since returns the times of the polls after the first n.
func (p *polls) since(n int) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.at[n:]...)
}

// await waits until more than n polls arrived, at most d.
func (p *polls) await(t *testing.T, n int, d time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for p.count() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no poll within %v (%d so far)", what, d, p.count())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// visibility sets what document.hidden says and tells the page, as the
// browser does when the tab goes to the background and back (headless
// Chromium keeps every tab visible).
func visibility(hidden bool) chromedp.Action[chromedp.Void] {
	state := "visible"
	if hidden {
		state = "hidden"
	}
	return chromedp.Evaluate[chromedp.Void](`(() => {
		Object.defineProperty(document, "hidden", { configurable: true, get: () => ` + map[bool]string{true: "true", false: "false"}[hidden] + ` });
		Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "` + state + `" });
		document.dispatchEvent(new Event("visibilitychange"));
	})()`)
}

// TestBrowserLiveBackoffAndHidden drives the overview's live part: it
// polls every Refresh; while the server fails, the wait between polls
// doubles; while the tab is hidden no poll reaches the server, and showing
// it again polls at once, not after the backed-off wait; success brings
// the wait back to Refresh.
func TestBrowserLiveBackoffAndHidden(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{Refresh: 200 * time.Millisecond})
	p := &polls{}
	srv := httptest.NewServer(p.wrap(b.Handler))
	t.Cleanup(srv.Close)

	do(t, tab, "overview", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(css(`#total-ready`)))
	p.await(t, 2, 5*time.Second, "live overview")

	// Failing: each wait twice the one before (200, 400, 800, 1600 ms).
	p.failing.Store(true)
	n := p.count()
	p.await(t, n+4, 15*time.Second, "failing server")
	at := p.since(n)[:5]
	for i := 2; i < len(at); i++ {
		prev, gap := at[i-1].Sub(at[i-2]), at[i].Sub(at[i-1])
		if gap < prev*3/2 {
			t.Errorf("poll %d after a failure came %v after the one before, which came after %v: want the wait to double", i, gap, prev)
		}
	}
	if last := at[4].Sub(at[3]); last < 1200*time.Millisecond {
		t.Errorf("fourth wait after failures %v: want about 1.6 s", last)
	}

	// Hidden, over many intervals and past the backed-off wait: no poll.
	do(t, tab, "hide", visibility(true))
	p.failing.Store(false)
	time.Sleep(300 * time.Millisecond) // a poll in flight when hidden lands
	hiddenAt := p.count()
	time.Sleep(4 * time.Second)
	if got := p.count(); got != hiddenAt {
		t.Errorf("%d polls reached the server while the tab was hidden", got-hiddenAt)
	}

	// Shown again: a poll at once (the backed-off wait is 3.2 s), then
	// every 200 ms again.
	shown := time.Now()
	do(t, tab, "show", visibility(false))
	p.await(t, hiddenAt, time.Second, "shown again")
	if d := p.since(hiddenAt)[0].Sub(shown); d > time.Second {
		t.Errorf("first poll %v after the tab showed", d)
	}
	p.await(t, hiddenAt+3, 3*time.Second, "back to normal")
	after := p.since(hiddenAt)
	if gap := after[3].Sub(after[2]); gap > time.Second {
		t.Errorf("wait after successes %v: want the Refresh of 200 ms again", gap)
	}
	// The part was replaced with fresh content, still live.
	do(t, tab, "still live", chromedp.WaitVisible(css(`#live[data-live] #total-ready`)))
}

// TestBrowserLiveWaitsForAPressedPointer holds the mouse button down on
// the overview's live part: polls go on, but the part is not replaced
// under the pointer (a click whose press and release land on two
// versions of a button is lost); released, the next poll replaces it.
func TestBrowserLiveWaitsForAPressedPointer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	b := setup(t, dashboard.Config{Refresh: 200 * time.Millisecond})
	p := &polls{}
	srv := httptest.NewServer(p.wrap(b.Handler))
	t.Cleanup(srv.Close)

	do(t, tab, "overview", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(css(`#total-ready`)))
	mark := chromedp.Evaluate[chromedp.Void](`document.getElementById("live").dataset.mark = "1"`)
	marked := chromedp.Evaluate[bool](`document.getElementById("live").dataset.mark === "1"`)
	// A point inside the live part: the first card.
	box := value(t, tab, "card", chromedp.Evaluate[[]float64](`(() => { const r = document.getElementById("total-ready").getBoundingClientRect(); return [r.x + 5, r.y + 5]; })()`))
	do(t, tab, "press", mark, chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, box[0], box[1], chromedp.ButtonLeft))
	n := p.count()
	p.await(t, n+3, 5*time.Second, "polls while pressed")
	time.Sleep(100 * time.Millisecond) // the last answer is read and dropped
	if !value(t, tab, "still marked", marked) {
		t.Error("the live part was replaced under a pressed pointer")
	}
	do(t, tab, "release", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, box[0], box[1], chromedp.ButtonLeft))
	n = p.count()
	p.await(t, n+2, 5*time.Second, "polls after release")
	time.Sleep(100 * time.Millisecond)
	if value(t, tab, "replaced", marked) {
		t.Error("the live part was not replaced after the pointer was released")
	}
}
