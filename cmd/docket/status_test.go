package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
)

type mailArgs struct {
	To string `json:"to"`
}

func (mailArgs) Kind() string { return "mail" }

// opsSetup migrates a schema and fills it: a backlog in "mail" whose oldest
// job is 2 minutes late, and three dead jobs with a secret in the payload.
func opsSetup(t *testing.T) (url, schema string, dead []int64) {
	t.Helper()
	ctx := context.Background()
	url, schema = pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	pool := pgtest.Pool(t)
	c := enqueueClient(t, pool, schema)
	for range 3 {
		if _, err := c.Enqueue(ctx, pool, mailArgs{To: "secret@example.com"}, docket.Opts{Queue: "mail", RunAt: time.Now().Add(-2 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := c.Enqueue(ctx, pool, mailArgs{To: "secret@example.com"}, docket.Opts{Queue: "bounce"}); err != nil {
			t.Fatal(err)
		}
	}
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: w, Queues: []string{"bounce"}, Kinds: []string{"mail"}, Limit: 3, Lease: time.Minute})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claim %d %v", len(jobs), err)
	}
	var d []queue.Dead
	for i, j := range jobs {
		run := queue.RunOf(j)
		if i == 0 {
			// What the handler recorded before its last attempt failed.
			run.Result = json.RawMessage(`{"note": "<tried 3 relays>", "relays": ["a", "b"]}`)
		}
		d = append(d, queue.Dead{Run: run, Reason: admin.ReasonExhausted, Error: "smtp: 550 mailbox unavailable"})
		dead = append(dead, j.ID)
	}
	if _, err := q.DeadLetter(ctx, pool, w, d); err != nil {
		t.Fatal(err)
	}
	return url, schema, dead
}

func TestStatusCommand(t *testing.T) {
	t.Parallel()
	url, schema, _ := opsSetup(t)
	db := []string{"--database-url", url, "--schema", schema}
	code, out, errOut := runDocket(t, append([]string{"status"}, db...)...)
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	t.Logf("docket status:\n%s", out)
	for _, want := range []string{"QUEUE", "mail", "bounce", "docket_jobs", "[lag] queue mail", "[dlq_growing] queue bounce: dead-letter queue grew by 3",
		"[unserved_kind] 3 ready mail jobs in queue mail", "workers: 0 live"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}
	if strings.Contains(out, "secret") {
		t.Error("status shows a payload")
	}
	code, out, _ = runDocket(t, append([]string{"status", "--json"}, db...)...)
	var s struct{ Queues, Warnings []map[string]any }
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || len(s.Queues) != 2 || len(s.Warnings) == 0 {
		t.Fatalf("status --json: %d %s", code, out)
	}
	// A raised threshold silences the lag warning.
	if _, out, _ = runDocket(t, append([]string{"status", "--lag", "1h"}, db...)...); strings.Contains(out, "[lag]") {
		t.Errorf("lag warning over a 1h threshold:\n%s", out)
	}
	// Watch refreshes until interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var buf strings.Builder
	if code := run(ctx, append([]string{"status", "--watch", "100ms"}, db...), &buf, &buf); code != 0 {
		t.Fatalf("watch: %d %s", code, buf.String())
	}
	if n := strings.Count(buf.String(), "QUEUE"); n < 2 {
		t.Errorf("watch printed %d snapshots", n)
	}
}

func TestDLQJobsQueuesCommands(t *testing.T) {
	t.Parallel()
	url, schema, dead := opsSetup(t)
	db := []string{"--database-url", url, "--schema", schema}
	cmd := func(args ...string) (int, string, string) { return runDocket(t, append(args, db...)...) }

	code, out, errOut := cmd("dlq", "list", "--kind", "mail", "--error", "%550%", "--since", "1h")
	if code != 0 || strings.Count(out, "smtp: 550") != 3 || strings.Contains(out, "secret") {
		t.Fatalf("dlq list: %d %q %q", code, out, errOut)
	}
	if _, out, _ = cmd("dlq", "list", "--error", "%timeout%"); strings.Contains(out, "smtp") {
		t.Errorf("error filter ignored: %s", out)
	}
	id := itoa(dead[0])
	if code, out, _ = cmd("dlq", "show", id); code != 0 || strings.Contains(out, "secret") || !strings.Contains(out, "payload: hidden") {
		t.Errorf("dlq show without --payload: %d %s", code, out)
	}
	if code, out, _ = cmd("dlq", "show", id, "--payload"); code != 0 || !strings.Contains(out, "secret@example.com") {
		t.Errorf("dlq show --payload: %d %s", code, out)
	}
	if code, _, errOut = cmd("dlq", "replay"); code != 2 || !strings.Contains(errOut, "needs ids") {
		t.Errorf("replay without selection: %d %s", code, errOut)
	}
	if code, out, _ = cmd("dlq", "replay", "--kind", "mail", "--dry-run"); code != 0 || !strings.Contains(out, "would replay 3") {
		t.Errorf("replay dry run: %d %s", code, out)
	}
	if code, out, errOut = cmd("dlq", "replay", id, "--rate", "50/s"); code != 0 || !strings.Contains(out, "replayed 1 dead jobs") {
		t.Errorf("replay by id: %d %s %s", code, out, errOut)
	}
	if code, out, _ = cmd("dlq", "replay", "--error", "smtp:%", "--rate", "100/s"); code != 0 || !strings.Contains(out, "replayed 2 dead jobs") {
		t.Errorf("replay by error: %d %s", code, out)
	}
	// The replayed job can be cancelled back into the DLQ, retried, purged.
	if code, out, errOut = cmd("jobs", "cancel", id); code != 0 || !strings.Contains(out, "cancelled") {
		t.Errorf("jobs cancel: %d %s %s", code, out, errOut)
	}
	if code, out, errOut = cmd("jobs", "retry", id); code != 0 || !strings.Contains(out, "ready to run") {
		t.Errorf("jobs retry: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = cmd("jobs", "retry", "987654"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("jobs retry unknown: %d %s", code, errOut)
	}
	cmd("jobs", "cancel", id)
	if code, out, _ = cmd("dlq", "purge", "--older-than", "1h"); code != 0 || !strings.Contains(out, "deleted 0") {
		t.Errorf("purge 1h: %d %s", code, out)
	}
	if code, out, _ = cmd("dlq", "purge", "--older-than", "1ns"); code != 0 || !strings.Contains(out, "deleted 1") {
		t.Errorf("purge: %d %s", code, out)
	}

	if code, out, _ = cmd("queues", "pause", "mail"); code != 0 || !strings.Contains(out, "paused queue mail") {
		t.Errorf("pause: %d %s", code, out)
	}
	if _, out, _ = cmd("queues", "list"); !strings.Contains(out, "mail\tpaused") {
		t.Errorf("list: %s", out)
	}
	if _, out, _ = cmd("status"); !strings.Contains(out, "mail (paused)") || !strings.Contains(out, "[paused] queue mail") {
		t.Errorf("status of a paused queue:\n%s", out)
	}
	if code, _, _ = cmd("queues", "resume", "mail"); code != 0 {
		t.Errorf("resume: %d", code)
	}
	if _, out, _ = cmd("queues", "list"); !strings.Contains(out, "no paused queues") {
		t.Errorf("list after resume: %s", out)
	}
}

func TestMetricsServeCommand(t *testing.T) {
	t.Parallel()
	url, schema, _ := opsSetup(t)
	if code, _, errOut := runDocket(t, "metrics", "sideways", "--database-url", url); code != 2 || !strings.Contains(errOut, "want serve") {
		t.Errorf("metrics sideways: %d %s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"metrics", "serve", "--addr", "127.0.0.1:0", "--database-url", url, "--schema", schema}, &out, &errOut)
	}()
	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" && time.Now().Before(deadline) {
		if _, rest, ok := strings.Cut(errOut.String(), "http://"); ok {
			addr, _, _ = strings.Cut(rest, "/metrics")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if addr == "" {
		t.Fatalf("no address: %s", errOut.String())
	}
	body := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{`docket_queue_lag_seconds{queue="mail"}`, `docket_dlq_jobs{queue="bounce"} 3`, `docket_status_up 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The migrated schema makes the server ready; the body says so.
	if got := httpGet(t, "http://"+addr+"/readyz"); got != "ready\n" {
		t.Errorf("/readyz = %q, want ready", got)
	}
	if got := httpGet(t, "http://"+addr+"/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q, want ok", got)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("metrics serve exit %d: %s", code, errOut.String())
	}
}

// Jobs that died without running count no retries in docket status: a
// ready job cancelled with docket jobs cancel, and a workflow job cancelled
// because its parent failed.
func TestStatusRetriesOfJobsThatNeverRan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	db := []string{"--database-url", url, "--schema", schema}
	if code, _, errOut := runDocket(t, append([]string{"migrate", "up"}, db...)...); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	pool := pgtest.Pool(t)
	c := enqueueClient(t, pool, schema)
	e, err := c.Enqueue(ctx, pool, mailArgs{To: "a@example.com"}, docket.Opts{Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runDocket(t, append([]string{"jobs", "cancel", itoa(e.ID)}, db...)...); code != 0 {
		t.Fatalf("jobs cancel: %d %s %s", code, out, errOut)
	}
	wf, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "report", Jobs: []docket.WorkflowJob{
		{Ref: "extract", Args: mailArgs{}, Opts: docket.Opts{Queue: "reports", MaxAttempts: 1}},
		{Ref: "send", Args: mailArgs{}, Opts: docket.Opts{Queue: "reports"}, After: docket.After("extract")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(schema, queue.Config{})
	w := uuid.New()
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: w, Queues: []string{"reports"}, Kinds: []string{"mail"}, Limit: 10, Lease: time.Minute})
	if err != nil || len(jobs) != 1 || jobs[0].ID != wf.Jobs["extract"] {
		t.Fatalf("claimed %d jobs: %v", len(jobs), err)
	}
	if _, err := q.Fail(ctx, pool, w, []queue.Failure{{Run: queue.RunOf(jobs[0]), Error: "source unavailable"}}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runDocket(t, append([]string{"status", "--json"}, db...)...)
	var s struct {
		Queues []struct {
			Queue     string
			Dead1h    int64 `json:"dead_1h"`
			Retries1m int64 `json:"retries_1m"`
			Retries1h int64 `json:"retries_1h"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("status --json: %d %s %s", code, out, errOut)
	}
	dead := map[string]int64{"mail": 1, "reports": 2}
	for _, q := range s.Queues {
		if q.Dead1h != dead[q.Queue] || q.Retries1m != 0 || q.Retries1h != 0 {
			t.Errorf("queue %s: %d dead, retries %d/%d; want %d dead, retries 0/0", q.Queue, q.Dead1h, q.Retries1m, q.Retries1h, dead[q.Queue])
		}
	}
	if len(s.Queues) != 2 {
		t.Errorf("status lists %d queues, want mail and reports: %s", len(s.Queues), out)
	}
	_, out, _ = runDocket(t, append([]string{"status"}, db...)...)
	if strings.Contains(out, "-1/") || strings.Contains(out, "/-1") {
		t.Errorf("status shows a negative retry count:\n%s", out)
	}
}

// docket status warns of a schedule whose kind no live worker serves,
// naming the schedule and the kind, and counts in words that agree with
// their numbers ("1 slot", "1 claim").
func TestStatusUnservedScheduleAndPlurals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	db := []string{"--database-url", url, "--schema", schema}
	if code, _, errOut := runDocket(t, append([]string{"migrate", "up"}, db...)...); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".docket_schedules (name, spec, kind, queue, payload)
		VALUES ('nightly-report', '0 2 * * *', 'report', '', '{}')`); err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(schema, queue.Config{})
	mailer := queue.WorkerInfo{ID: uuid.New(), Host: "mailer-1", PID: 7, Kinds: []string{"mail"}, Queues: []string{"mail"},
		Slots: 1, TTL: time.Minute, Claims: 1, ClaimP50: time.Millisecond, ClaimP95: time.Millisecond, ClaimP99: time.Millisecond}
	if err := q.RegisterWorker(ctx, pool, mailer); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDocket(t, append([]string{"status"}, db...)...)
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	for _, want := range []string{
		"[unserved_schedule] schedule nightly-report: no live worker serves kind report; its runs will wait unclaimed",
		"workers: 1 live", "mailer-1 pid 7, 1 slot: claim p50", "(1 claim)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	for _, wrong := range []string{"1 slots", "1 claims"} {
		if strings.Contains(out, wrong) {
			t.Errorf("status says %q:\n%s", wrong, out)
		}
	}
	_, out, _ = runDocket(t, append([]string{"status", "--json"}, db...)...)
	var s struct {
		UnservedSchedules []struct {
			Kind      string
			Schedules int64
			Names     []string
		} `json:"unserved_schedules"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.UnservedSchedules) != 1 || s.UnservedSchedules[0].Kind != "report" ||
		s.UnservedSchedules[0].Schedules != 1 || len(s.UnservedSchedules[0].Names) != 1 || s.UnservedSchedules[0].Names[0] != "nightly-report" {
		t.Errorf("status --json unserved_schedules: %+v %v\n%s", s.UnservedSchedules, err, out)
	}

	reporter := queue.WorkerInfo{ID: uuid.New(), Host: "reports-1", PID: 8, Kinds: []string{"report"}, Queues: []string{"reports"}, TTL: time.Minute}
	if err := q.RegisterWorker(ctx, pool, reporter); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = runDocket(t, append([]string{"status"}, db...)...); strings.Contains(out, "unserved_schedule") || !strings.Contains(out, "workers: 2 live") {
		t.Errorf("status once a live worker serves report:\n%s", out)
	}
}
