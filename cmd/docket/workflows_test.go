package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
)

func TestWorkflowsCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	db := []string{"--database-url", url, "--schema", schema}
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runDocket(t, append(args, db...)...)
		if code != 0 {
			t.Fatalf("docket %v: %d %s", args, code, errOut)
		}
		// Columns are padded to their widths: compare words.
		return strings.Join(strings.Fields(out), " ")
	}
	if out := run("workflows", "list"); !strings.Contains(out, "(no workflows)") {
		t.Errorf("empty list:\n%s", out)
	}
	pool := pgtest.Pool(t)
	c := enqueueClient(t, pool, schema)
	res, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "nightly-report", Jobs: []docket.WorkflowJob{
		{Ref: "extract", Args: mailArgs{To: "secret@example.com"}},
		{Ref: "send", Args: mailArgs{To: "secret@example.com"}, After: docket.After("extract")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := itoa(res.ID)
	out := run("workflows", "list")
	if !strings.Contains(out, id+" running 2") || !strings.Contains(out, "nightly-report") {
		t.Errorf("list:\n%s", out)
	}
	out = run("workflows", "show", id)
	if !strings.Contains(out, "state running") || !strings.Contains(out, itoa(res.Jobs["send"])+" waiting") || strings.Contains(out, "secret@example.com") {
		t.Errorf("show:\n%s", out)
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(run("workflows", "show", id, "--json")), &detail); err != nil {
		t.Fatal(err)
	}
	if detail["state"] != "running" || detail["remaining"] != float64(2) || len(detail["live_or_dead_jobs"].([]any)) != 2 {
		t.Errorf("show --json: %v", detail)
	}
	// A step waiting for a signal: what it waits for, its deadline, and
	// the signal sent from the shell.
	gate, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "gate", Jobs: []docket.WorkflowJob{
		{Ref: "approve", Args: mailArgs{}, Opts: docket.Opts{Queue: "gate"}, WaitFor: "approved", WaitTimeout: time.Hour},
	}})
	if err != nil {
		t.Fatal(err)
	}
	gid := itoa(gate.ID)
	if out := run("workflows", "show", gid); !strings.Contains(out, itoa(gate.Jobs["approve"])+" waiting gate mail signal approved until ") {
		t.Errorf("show of a step waiting for a signal:\n%s", out)
	}
	var gd struct {
		Jobs []struct {
			WaitFor   string    `json:"wait_for"`
			WaitUntil time.Time `json:"wait_until"`
		} `json:"live_or_dead_jobs"`
	}
	if err := json.Unmarshal([]byte(run("workflows", "show", gid, "--json")), &gd); err != nil {
		t.Fatal(err)
	}
	if len(gd.Jobs) != 1 || gd.Jobs[0].WaitFor != "approved" || time.Until(gd.Jobs[0].WaitUntil) < 59*time.Minute || time.Until(gd.Jobs[0].WaitUntil) > time.Hour {
		t.Errorf("show --json of a step waiting for a signal: %+v", gd)
	}
	if code, _, errOut := runDocket(t, append([]string{"workflows", "signal", gid, "approved", "--payload", "{bad"}, db...)...); code == 0 || !strings.Contains(errOut, "not valid JSON") {
		t.Errorf("signal with a bad payload: %d %s", code, errOut)
	}
	if out := run("workflows", "signal", gid, "approved", "--payload", `{"by":"ops"}`); !strings.Contains(out, "signal approved sent to workflow "+gid+": 1 step released now") {
		t.Errorf("signal:\n%s", out)
	}
	if out := run("workflows", "show", gid); !strings.Contains(out, itoa(gate.Jobs["approve"])+" ready gate mail -") {
		t.Errorf("show after the signal:\n%s", out)
	}
	if code, _, errOut := runDocket(t, append([]string{"workflows", "signal", gid, "approved"}, db...)...); code != exitFailure || !strings.Contains(errOut, "already sent") {
		t.Errorf("second signal: %d %s", code, errOut)
	}
	if out := run("workflows", "cancel", id); !strings.Contains(out, "2 jobs moved to the dead-letter table") {
		t.Errorf("cancel:\n%s", out)
	}
	if out := run("workflows", "show", id); !strings.Contains(out, "state cancelled") || strings.Count(out, "cancelled workflow "+id+" cancelled") != 2 {
		t.Errorf("show after cancel:\n%s", out)
	}
	if code, _, errOut := runDocket(t, append([]string{"workflows", "show", "99999999"}, db...)...); code != exitFailure || !strings.Contains(errOut, "no workflow 99999999") {
		t.Errorf("unknown workflow: %d %s", code, errOut)
	}
	// A finished workflow is not cancelled: exit 1, and it stays succeeded.
	done, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "one-off", Jobs: []docket.WorkflowJob{
		{Ref: "only", Args: mailArgs{}, Opts: docket.Opts{Queue: "one-off"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(schema, queue.Config{})
	w := uuid.New()
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: w, Queues: []string{"one-off"}, Kinds: []string{"mail"}, Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claimed %d jobs: %v", len(jobs), err)
	}
	if _, err := q.Complete(ctx, pool, w, []queue.Run{queue.RunOf(jobs[0])}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	doneID := itoa(done.ID)
	code, out, errOut := runDocket(t, append([]string{"workflows", "cancel", doneID}, db...)...)
	if code != exitFailure || !strings.Contains(errOut, "workflow "+doneID+" succeeded") || !strings.Contains(errOut, "already finished") || out != "" {
		t.Errorf("cancel of a succeeded workflow: exit %d, stdout %q, stderr %q; want exit 1 saying it already finished", code, out, errOut)
	}
	if out := run("workflows", "show", doneID); !strings.Contains(out, "state succeeded") || strings.Contains(out, "cancelled") {
		t.Errorf("show after the refused cancel:\n%s", out)
	}
	if code, _, errOut := runDocket(t, "workflows", "cancel", "x"); code != exitUsage || !strings.Contains(errOut, `workflow id "x" is not a positive integer`) {
		t.Errorf("bad id: %d %s", code, errOut)
	}
}

// workflows show names a child workflow's parent job and a job's child
// workflow.
func TestWorkflowsShowChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	if code, _, errOut := runDocket(t, "migrate", "up", "--database-url", url, "--schema", schema); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	pool := pgtest.Pool(t)
	c := enqueueClient(t, pool, schema)
	parent, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "order", Jobs: []docket.WorkflowJob{
		{Ref: "pack", Args: mailArgs{To: "secret@example.com"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	child, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "pack items", Jobs: []docket.WorkflowJob{
		{Ref: "item", Args: mailArgs{To: "secret@example.com"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// As EnqueueChildWorkflow links them from the pack job's handler.
	if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".docket_workflows SET parent_job_id = $2, parent_workflow_id = $3, depth = 1
		WHERE id = $1`, child.ID, parent.Jobs["pack"], parent.ID); err != nil {
		t.Fatal(err)
	}
	show := func(id int64) string {
		t.Helper()
		code, out, errOut := runDocket(t, "workflows", "show", itoa(id), "--database-url", url, "--schema", schema)
		if code != 0 {
			t.Fatalf("show %d: %s", id, errOut)
		}
		return strings.Join(strings.Fields(out), " ")
	}
	if out, want := show(child.ID), "child of job "+itoa(parent.Jobs["pack"])+" of workflow "+itoa(parent.ID)+" (depth 1)"; !strings.Contains(out, want) {
		t.Errorf("child's show lacks %q:\n%s", want, out)
	}
	if out, want := show(parent.ID), itoa(parent.Jobs["pack"])+" ready default mail - workflow "+itoa(child.ID); !strings.Contains(out, want) {
		t.Errorf("parent's show lacks %q:\n%s", want, out)
	}
}
