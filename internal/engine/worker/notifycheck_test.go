package worker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// readyz fetches the worker's /readyz.
func readyz(t *testing.T, w *Worker) (int, string) {
	t.Helper()
	w.mu.Lock()
	srv := w.metricsSrv
	w.mu.Unlock()
	resp, err := http.Get("http://" + srv.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// checkEnded waits until the worker's notification check has ended and
// returns what it found.
func checkEnded(t *testing.T, w *Worker) error {
	t.Helper()
	waitFor(t, 30*time.Second, "the notification check to end", func() bool {
		done, _ := w.NotifyCheck()
		return done
	})
	_, err := w.NotifyCheck()
	return err
}

// A worker whose LISTEN connection never hears the NOTIFY the worker sends
// itself says so once, in a WARN naming ListenURL and in /readyz (which
// stays 200: polling still finds every job), without delaying Start; its
// jobs still run. Here ListenURL names another database of the server,
// where the schema's notifications never arrive, as they never reach a
// LISTEN made through a transaction pooler.
func TestNotifyCheckWarnsWhenNotificationsAreLost(t *testing.T) {
	t.Parallel()
	e := setup(t, 6)
	elsewhere, err := pgsrv.WithDatabase(pgtest.URL(t), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	reg := handlers.NewRegistry()
	runs := newCounter()
	handlers.MustRegister(reg, func(_ context.Context, j *handlers.Job[testArgs]) error { runs.add(j.ID); return nil }, handlers.KindOpts{})
	const timeout = 2 * time.Second
	began := time.Now()
	w := e.worker(reg, Config{ListenURL: elsewhere, NotifyCheckTimeout: timeout, MetricsAddr: "127.0.0.1:0",
		PollInterval: 200 * time.Millisecond, HeartbeatInterval: 300 * time.Millisecond})
	if done, _ := w.NotifyCheck(); done && time.Since(began) < timeout {
		t.Error("the check ended before its timeout although no notification can arrive")
	}
	if err := checkEnded(t, w); !errors.Is(err, ErrNotifyLost) {
		t.Fatalf("NotifyCheck: %v, want ErrNotifyLost", err)
	}
	if took := time.Since(began); took < timeout {
		t.Errorf("the check gave up after %s, before its timeout %s", took, timeout)
	}
	const warn = "notifications do not reach this worker"
	waitFor(t, 10*time.Second, "the WARN", func() bool { return e.logs.contains(warn) })
	logs := e.logs.String()
	if n := strings.Count(logs, warn); n != 1 {
		t.Errorf("%d WARNs about lost notifications, want 1", n)
	}
	if !strings.Contains(logs, "level=WARN msg=\""+warn) || !strings.Contains(logs, "ListenURL") {
		t.Errorf("the WARN does not say what to do:\n%s", logs)
	}
	code, body := readyz(t, w)
	if code != 200 || !strings.HasPrefix(body, "ready\n") || !strings.Contains(body, "warning: "+ErrNotifyLost.Error()) {
		t.Errorf("/readyz = %d %q, want 200, ready and a warning about notifications", code, body)
	}
	id := e.enqueue(testArgs{N: 1}, enqueue.Opts{})
	e.waitWhere(id, "done", 30*time.Second)
	// docket status names the worker that only polls.
	var lost []admin.Warning
	waitFor(t, 10*time.Second, "status to warn of the worker's lost notifications", func() bool {
		s, err := e.ops.Status(t.Context(), e.pool, admin.Thresholds{})
		if err != nil {
			t.Fatal(err)
		}
		lost = nil
		for _, wn := range s.Warnings {
			if wn.Code == admin.WarnNotifyLost {
				lost = append(lost, wn)
			}
		}
		return len(lost) > 0
	})
	if len(lost) != 1 || lost[0].Subject != w.ID().String() || !strings.Contains(lost[0].Message, "ListenURL") {
		t.Errorf("status warnings of lost notifications: %+v, want one for worker %s naming ListenURL", lost, w.ID())
	}
}

// With LISTEN straight on the database the check passes, quietly, and
// /readyz has nothing to add; with the check off there is nothing to wait
// for.
func TestNotifyCheckPasses(t *testing.T) {
	t.Parallel()
	e := setup(t, 6)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	// A timeout far beyond the test's wait: the check ends when the
	// notification arrives, not at its timeout.
	w := e.worker(reg, Config{MetricsAddr: "127.0.0.1:0", NotifyCheckTimeout: time.Hour})
	if err := checkEnded(t, w); err != nil {
		t.Fatalf("NotifyCheck with LISTEN on the database: %v", err)
	}
	if e.logs.contains("notifications do not reach") {
		t.Errorf("WARN although notifications arrive:\n%s", e.logs.String())
	}
	if code, body := readyz(t, w); code != 200 || body != "ready\n" {
		t.Errorf("/readyz = %d %q, want 200 \"ready\\n\"", code, body)
	}
	s, err := e.ops.Status(t.Context(), e.pool, admin.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	for _, wn := range s.Warnings {
		if wn.Code == admin.WarnNotifyLost {
			t.Errorf("status warns of lost notifications although they arrive: %+v", wn)
		}
	}

	off := e.worker(reg, Config{NotifyCheckTimeout: -1})
	if done, err := off.NotifyCheck(); !done || err != nil {
		t.Errorf("check off: NotifyCheck = %v, %v, want true, nil", done, err)
	}
}
