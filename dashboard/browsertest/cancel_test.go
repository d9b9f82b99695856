package browsertest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
)

type longExport struct{}

func (longExport) Kind() string { return "long_export" }

// The page of a running job shows the progress its handler reports, live,
// within about a second and the page's refresh; its Cancel button stops
// the handler (its context ends with ErrCancelled) and the job ends dead,
// reason cancelled.
func TestBrowserCancelRunningJob(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	pool := pgtest.PoolN(t, 8)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	cause := make(chan error, 1)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[longExport]) error {
		for i := 1; ctx.Err() == nil; i++ {
			if err := handlers.SetProgress(ctx, map[string]int{"rows": i}, fmt.Sprintf("exported %d rows", i)); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		cause <- context.Cause(ctx)
		return nil
	}, handlers.KindOpts{})
	quiet := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	cl, err := docket.NewClient(pool, docket.Config{Schema: schema, Registry: reg,
		Worker: docket.WorkerConfig{PollInterval: 100 * time.Millisecond, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cl.Stop(context.Background())
	job, err := cl.Enqueue(ctx, pool, longExport{}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, ops, pool, job.ID, admin.StateRunning)
	h, err := dashboard.Handler(pool, dashboard.Config{Schema: schema, Refresh: 300 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	do(t, tab, "running job page",
		chromedp.Navigate(srv.URL+fmt.Sprintf("/jobs/%d", job.ID)),
		chromedp.WaitVisible(css(`#job-state.state-running`)),
		chromedp.WaitVisible(css(`#progress`)),
	)
	// The live part refreshes the progress: the row count grows.
	first := value(t, tab, "progress", chromedp.Text(css(`#progress`)))
	value(t, tab, "progress moves on",
		chromedp.Poll[bool](fmt.Sprintf(`document.querySelector('#progress') && document.querySelector('#progress').textContent !== %q`, first),
			chromedp.WithPollingTimeout(5*time.Second)))
	if !strings.Contains(first, "exported") || !strings.Contains(first, `"rows"`) {
		t.Errorf("progress shown: %q", first)
	}
	shoot(t, tab, "job-running")
	clickLive(t, tab, "cancel", `#cancel`)
	// Confirmed first, like every cancel: the running job is the one row.
	do(t, tab, "confirmation", chromedp.WaitVisible(css(`#confirm-count`)))
	if n := previewed(t, tab); n != 1 {
		t.Errorf("the confirmation counts %d rows, want the running job", n)
	}
	do(t, tab, "confirm", chromedp.Click(css(`#confirm-yes`)))
	do(t, tab, "cancelled", chromedp.WaitVisible(css(`#job-state.state-dead`)))
	select {
	case err := <-cause:
		if !errors.Is(err, handlers.ErrCancelled) {
			t.Errorf("handler's context ended with %v, want ErrCancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	j, err := ops.Jobs().Get(ctx, pool, job.ID, false)
	if err != nil || j.Reason != admin.ReasonCancelled || j.LastError != "cancelled from the dashboard" || j.Progress == nil {
		t.Errorf("cancelled job: %+v %v", j, err)
	}
}
