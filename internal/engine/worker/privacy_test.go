package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// payloadMarker stands for personal data in a payload: it must show up in
// no log line, recorded error or metric.
const payloadMarker = "PII-MARKER-5d1e-alice@example.com"

// privacyArgs carry the marker; Case picks what the handler does.
type privacyArgs struct {
	Case   string `json:"case"`
	Secret string `json:"secret"`
}

func (privacyArgs) Kind() string { return "privacy" }

// privacyWrongArgs has privacyArgs' kind and a payload that does not decode
// into it, with the marker where a string is expected.
type privacyWrongArgs struct {
	Secret []string `json:"secret"`
}

func (privacyWrongArgs) Kind() string { return "privacy" }

// Payloads never appear in logs (at debug level), in the errors Docket
// records for live and dead jobs, or in the metrics, whatever the job's
// outcome: success, a retried failure, an exhausted failure, a panic, a
// snooze, a cancel by the handler or by an operator, an undecodable payload.
// Handlers here return errors that do not quote the payload; what a handler
// puts in its own error is its own business.
func TestPayloadNeverInLogsErrorsOrMetrics(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	logs := e.logs
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[privacyArgs]) error {
		if j.Args.Secret != payloadMarker {
			return handlers.Cancel(errors.New("payload did not arrive"))
		}
		switch j.Args.Case {
		case "retry":
			return handlers.RetryAfter(time.Hour, errors.New("upstream refused the request"))
		case "fail":
			return errors.New("upstream refused the request")
		case "panic":
			var m map[string]int
			m["x"] = len(j.Args.Secret) // nil map write: a runtime panic
		case "snooze":
			return handlers.Snooze(time.Hour)
		case "cancel":
			return handlers.Cancel(errors.New("customer deleted"))
		}
		return nil
	}, handlers.KindOpts{})
	w := e.worker(reg, Config{
		Logger:            logger,
		Middleware:        []core.Middleware{handlers.Logging(logger)},
		MetricsAddr:       "127.0.0.1:0",
		Collectors:        e.statusViews(),
		HeartbeatInterval: 100 * time.Millisecond,
	})
	ids := map[string]int64{}
	for _, c := range []struct {
		name string
		opts enqueue.Opts
	}{
		{"ok", enqueue.Opts{}},
		{"retry", enqueue.Opts{}},
		{"fail", enqueue.Opts{MaxAttempts: 1}},
		{"panic", enqueue.Opts{MaxAttempts: 1}},
		{"snooze", enqueue.Opts{}},
		{"cancel", enqueue.Opts{}},
		{"operator_cancel", enqueue.Opts{Delay: time.Hour}},
	} {
		ids[c.name] = e.enqueue(privacyArgs{Case: c.name, Secret: payloadMarker}, c.opts)
	}
	ids["undecodable"] = e.enqueue(privacyWrongArgs{Secret: []string{payloadMarker}}, enqueue.Opts{})
	if _, err := e.ops.Jobs().Cancel(t.Context(), e.pool, ids["operator_cancel"], "not needed"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"ok": "done", "retry": "scheduled", "snooze": "scheduled", "fail": "dead", "panic": "dead", "cancel": "dead", "operator_cancel": "dead", "undecodable": "dead",
	} {
		e.waitWhere(ids[name], want, 10*time.Second)
	}
	var text string
	waitFor(t, 10*time.Second, "the outcomes in the metrics", func() bool {
		text = scrape(t, w.MetricsAddr())
		done, _ := sample(text, `docket_jobs_finished_total{kind="privacy",outcome="completed"}`)
		dead, _ := sample(text, `docket_jobs_finished_total{kind="privacy",outcome="dead"}`)
		return done == 1 && dead >= 4
	})

	// What Docket recorded, so the test proves it looked at real errors.
	if d := e.dead(ids["undecodable"]); d.reason != core.ReasonUndecodable || !strings.Contains(d.lastError, "field secret") {
		t.Errorf("undecodable job: %+v", d)
	}
	if d := e.dead(ids["panic"]); !strings.HasPrefix(d.lastError, "panic: ") {
		t.Errorf("panicked job: %+v", d)
	}
	var recorded []string
	rows, err := e.pool.Query(t.Context(), e.sql(`
		SELECT COALESCE(last_error, '') FROM {{schema}}.docket_jobs
		UNION ALL
		SELECT reason || ' ' || COALESCE(last_error, '') FROM {{schema}}.docket_jobs_dead`))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 7 { // retry, snooze, and five dead jobs
		t.Errorf("%d recorded rows, want 7: %q", len(recorded), recorded)
	}
	if !strings.Contains(strings.Join(recorded, "\n"), "upstream refused the request") {
		t.Errorf("the retried job's error is not recorded: %q", recorded)
	}
	if !logs.contains("job handler panicked") || !logs.contains(`level=DEBUG msg="job ran"`) {
		t.Errorf("logs miss the panic or debug lines:\n%s", logs.String())
	}

	for where, text := range map[string]string{
		"logs":            logs.String(),
		"recorded errors": strings.Join(recorded, "\n"),
		"metrics":         text,
	} {
		if strings.Contains(text, payloadMarker) || strings.Contains(text, "alice@example.com") {
			t.Errorf("the payload appears in the %s:\n%s", where, text)
		}
	}
}
