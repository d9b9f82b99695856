package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// A handler's progress reaches the job row within about a second, with the
// heartbeat brought forward (the regular one is 10 s away): thousands of
// SetProgress calls cost no statement each, only the heartbeats (at most
// one a second while progress comes in), and the last value wins.
func TestProgressWrittenWithHeartbeat(t *testing.T) {
	t.Parallel()
	counter := &statementCounter{match: isHeartbeat}
	e := setupOn(t, countedPool(t, counter), pgtest.Schema(t))
	const calls = 5000
	release := make(chan struct{})
	reported := make(chan time.Time, 2)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		if err := handlers.SetProgress(ctx, nil, "starting"); err != nil {
			return err
		}
		reported <- time.Now()
		// About two seconds of progress reports.
		for i := 1; i <= calls; i++ {
			if err := handlers.SetProgress(ctx, map[string]int{"done": i, "of": calls}, "copying rows"); err != nil {
				return err
			}
			if i%100 == 0 {
				time.Sleep(40 * time.Millisecond)
			}
		}
		reported <- time.Now()
		<-release
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: 30 * time.Second})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	progress := func() (json.RawMessage, string) {
		j, err := e.ops.Jobs().Get(t.Context(), e.pool, id, false)
		if err != nil || j.Progress == nil {
			return nil, ""
		}
		return j.Progress.Value, j.Progress.Message
	}
	first := <-reported
	waitFor(t, 5*time.Second, "the first progress", func() bool { _, m := progress(); return m != "" })
	if took := time.Since(first); took > 1500*time.Millisecond {
		t.Errorf("first progress visible %s after it was reported, want about a second at most", took)
	}
	last := <-reported
	var shown time.Duration
	waitFor(t, 5*time.Second, "the last progress", func() bool {
		v, m := progress()
		shown = time.Since(last)
		return string(v) == `{"of": 5000, "done": 5000}` && m == "copying rows"
	})
	if shown > 1500*time.Millisecond {
		t.Errorf("last progress visible %s after it was reported, want about a second at most", shown)
	}
	elapsed := time.Since(first)
	beats := counter.n.Load()
	// At most one heartbeat per second of reports, and the regular ones.
	if limit := int64(elapsed/time.Second) + 2; beats > limit {
		t.Errorf("%d heartbeats in %s of progress reports, want at most %d", beats, elapsed, limit)
	}
	t.Logf("%d SetProgress calls in %s: %d heartbeats", calls+1, elapsed.Round(time.Millisecond), beats)
	close(release)
	e.waitWhere(id, "done", 10*time.Second)
}

// SetProgress refuses what cannot be stored and leaves the recorded
// progress as it was.
func TestSetProgressRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	errs := make(chan []error, 1)
	release := make(chan struct{})
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		if err := handlers.SetProgress(ctx, 1, "kept"); err != nil {
			return err
		}
		errs <- []error{
			handlers.SetProgress(ctx, strings.Repeat("x", handlers.MaxProgressBytes), ""),
			handlers.SetProgress(ctx, 1, strings.Repeat("x", handlers.MaxProgressBytes)),
			handlers.SetProgress(ctx, json.RawMessage(`"\u0000"`), ""),
			handlers.SetProgress(ctx, json.RawMessage(`1e999999`), ""),
			handlers.SetProgress(ctx, nil, "bad \x00 text"),
			handlers.SetProgress(ctx, func() {}, ""),
		}
		<-release
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	for i, err := range <-errs {
		if !errors.Is(err, handlers.ErrInvalidProgress) {
			t.Errorf("refusal %d: %v, want ErrInvalidProgress", i, err)
		}
	}
	waitFor(t, 5*time.Second, "the progress", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND progress = '1' AND progress_message = 'kept'`, id) == 1
	})
	if err := handlers.SetProgress(t.Context(), 1, ""); !errors.Is(err, handlers.ErrNoJob) {
		t.Errorf("outside a handler: %v, want ErrNoJob", err)
	}
	close(release)
	e.waitWhere(id, "done", 10*time.Second)
}
