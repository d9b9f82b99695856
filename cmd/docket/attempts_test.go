package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// TestJobAttemptHistory runs a job through a real worker: it fails 5 times
// and dies, `dlq show` and `jobs show` list the 5 runs with their times,
// worker and errors (as text and as JSON); replayed, it keeps them and
// adds its completion.
func TestJobAttemptHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	db := []string{"--database-url", url, "--schema", schema}
	if code, _, errOut := runDocket(t, append([]string{"migrate", "up"}, db...)...); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	pool := pgtest.Pool(t)
	var healthy atomic.Bool
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[mailArgs]) error {
		if healthy.Load() {
			return nil
		}
		return fmt.Errorf("smtp: 421 try again (attempt %d)", j.Attempt)
	}, handlers.KindOpts{MaxAttempts: 5, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	c, err := docket.NewClient(pool, docket.Config{Schema: schema, Registry: reg,
		Worker: docket.WorkerConfig{PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	res, err := c.Enqueue(ctx, pool, mailArgs{To: "secret@example.com"}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	id := itoa(res.ID)
	count := func(sql string) int {
		var n int
		if err := pool.QueryRow(ctx, strings.ReplaceAll(sql, "{{schema}}", `"`+schema+`"`), res.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, "the job to die after 5 attempts", func() bool {
		return count(`SELECT count(*) FROM {{schema}}.docket_jobs_dead WHERE id = $1`) == 1
	})
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runDocket(t, append(args, db...)...)
		if code != 0 {
			t.Fatalf("docket %v: %d %s", args, code, errOut)
		}
		return out
	}
	host, _ := os.Hostname()
	worker := fmt.Sprintf("(%s pid %d)", host, os.Getpid())
	for _, cmd := range [][]string{{"dlq", "show", id}, {"jobs", "show", id}} {
		out := run(cmd...)
		t.Logf("docket %s:\n%s", strings.Join(cmd, " "), out)
		if !strings.Contains(out, "attempts:\n") || strings.Count(out, worker) != 5 {
			t.Errorf("docket %v lists no 5 attempts by this process:\n%s", cmd, out)
		}
		for n := 1; n <= 5; n++ {
			outcome := "failed"
			if n == 5 {
				outcome = "exhausted"
			}
			if !hasLine(out, outcome, fmt.Sprintf("smtp: 421 try again (attempt %d)", n)) {
				t.Errorf("docket %v: no attempt %d %s with its error", cmd, n, outcome)
			}
		}
		var doc jobDetailJSON
		if err := json.Unmarshal([]byte(run(append(cmd, "--json")...)), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.AttemptHistory) != 5 {
			t.Fatalf("docket %v --json: %d attempts, want 5", cmd, len(doc.AttemptHistory))
		}
		for i, a := range doc.AttemptHistory {
			if a.Attempt != i+1 || a.StartedAt.IsZero() || a.FinishedAt.Before(a.StartedAt) || a.WorkerHost != host ||
				a.WorkerPID != os.Getpid() || a.Error != fmt.Sprintf("smtp: 421 try again (attempt %d)", i+1) {
				t.Errorf("docket %v --json: attempt %d = %+v", cmd, i+1, a)
			}
			if i > 0 && a.StartedAt.Before(doc.AttemptHistory[i-1].FinishedAt) {
				t.Errorf("attempt %d started before attempt %d ended", i+1, i)
			}
		}
	}

	// Replayed, the job keeps its id and its 5 runs, and adds the one that
	// completes it.
	healthy.Store(true)
	run("dlq", "replay", id)
	waitFor(t, "the replayed job to complete", func() bool {
		return count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE id = $1`) == 1
	})
	var doc jobDetailJSON
	if err := json.Unmarshal([]byte(run("jobs", "show", id, "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	if n := len(doc.AttemptHistory); n != 6 || doc.AttemptHistory[5].Outcome != "completed" ||
		doc.AttemptHistory[5].Attempt != 1 || doc.AttemptHistory[4].Outcome != "exhausted" {
		t.Fatalf("replayed and completed: %+v", doc.AttemptHistory)
	}
}

// hasLine reports whether a line of out has each of parts, in order.
func hasLine(out string, parts ...string) bool {
	for line := range strings.Lines(out) {
		rest, ok := line, true
		for _, p := range parts {
			i := strings.Index(rest, p)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(p):]
		}
		if ok {
			return true
		}
	}
	return false
}
