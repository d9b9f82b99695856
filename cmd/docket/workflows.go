package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
	"github.com/jackc/pgx/v5/pgxpool"
)

func workflowsCommand() *command {
	return &command{
		name:    "workflows",
		summary: "list, show or cancel workflows (jobs with dependencies)",
		about: `A workflow is running while any of its jobs is live, then succeeded (every
job completed) or failed (some dead-lettered or were cancelled); cancelled
once cancelled. A finished workflow cannot be cancelled. See docs/workflows.md.`,
		verbs: []*command{
			{name: "list", summary: "list the newest workflows with their state", flags: workflowsList},
			{name: "show", summary: "show one workflow and its live and dead jobs", args: "ID", flags: workflowsShow},
			{name: "signal", summary: "send a signal to a workflow: its steps waiting for it run", args: "ID NAME", flags: workflowsSignal},
			{name: "cancel", summary: "cancel a running workflow: its jobs that are not running go to the dead-letter table", args: "ID", flags: workflowsCancel},
		},
	}
}

func workflowsList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	limit := fs.Int("limit", 50, "how many workflows, newest first")
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return fmt.Errorf("%w (list takes no ids; use show ID)", err)
		}
		if *limit < 1 {
			return fmt.Errorf("%w: --limit %d: want 1 or more", errUsage, *limit)
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		list, err := client.Workflows().List(ctx, pool, *limit)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, workflowsFrom(list), true)
		}
		if len(list) == 0 {
			fmt.Fprintln(out, "(no workflows)")
			return nil
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tJOBS\tREMAINING\tFAILED\tCREATED\tNAME")
		for _, w := range list {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%s\t%s\n", w.ID, w.State, w.Jobs, w.Remaining, w.Failed, fmtTime(w.CreatedAt), w.Name)
		}
		return tw.Flush()
	}
}

func workflowsShow(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onWorkflow(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, id int64) error {
			st, err := client.Workflows().Status(ctx, pool, id)
			if err != nil {
				return err
			}
			jobs, err := client.Workflows().Jobs(ctx, pool, id)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(out, workflowDetailFrom(st, jobs), true)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "id\t%d\nname\t%s\nstate\t%s\ncreated\t%s\n", st.ID, st.Name, st.State, fmtTime(st.CreatedAt))
			if !st.CancelledAt.IsZero() {
				fmt.Fprintf(tw, "cancelled\t%s\n", fmtTime(st.CancelledAt))
			}
			if st.ParentJobID != 0 {
				parent := fmt.Sprintf("job %d", st.ParentJobID)
				if st.ParentWorkflowID != 0 {
					parent += fmt.Sprintf(" of workflow %d", st.ParentWorkflowID)
				}
				fmt.Fprintf(tw, "child of\t%s (depth %d)\n", parent, st.Depth)
			}
			fmt.Fprintf(tw, "jobs\t%d (%d remaining, %d failed, %d completed)\n", st.Jobs, st.Remaining, st.Failed, st.Jobs-st.Remaining-st.Failed)
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(jobs) == 0 {
				return nil
			}
			fmt.Fprintln(out, "\nlive and dead jobs:")
			tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tKIND\tWAITS FOR\tCHILD\tREASON\tERROR")
			for _, j := range jobs {
				child := "-"
				if j.ChildWorkflowID != 0 {
					child = fmt.Sprintf("workflow %d", j.ChildWorkflowID)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.State, j.Queue, j.Kind, dash(waitsFor(j)), child, dash(j.Reason), dash(oneLine(j.LastError, 60)))
			}
			return tw.Flush()
		})
	}
}

// waitsFor says what a waiting step waits for: its signal, and until when.
func waitsFor(j admin.WorkflowJobState) string {
	switch {
	case j.WaitFor == "":
		return ""
	case j.WaitUntil.IsZero():
		return "signal " + j.WaitFor
	}
	return fmt.Sprintf("signal %s until %s", j.WaitFor, fmtTime(j.WaitUntil))
}

func workflowsSignal(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	payload := fs.String("payload", "", "the signal's payload, a JSON value; none when empty")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 2, "a workflow id and a signal name"); err != nil {
			return err
		}
		id, err := positiveID("workflow", pos[0])
		if err != nil {
			return err
		}
		var body any
		if *payload != "" {
			if !json.Valid([]byte(*payload)) {
				return fmt.Errorf("%w: --payload is not valid JSON", errUsage)
			}
			body = json.RawMessage(*payload)
		}
		_, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		client, err := docket.NewClient(pool, docket.Config{Schema: db.schema})
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		sent, err := client.Signal(ctx, pool, id, pos[1], body)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "signal %s sent to workflow %d: %s released now, %s when %s\n", pos[1], id,
			plural.Count(int64(len(sent.Released)), "step", "steps"),
			plural.Count(int64(len(sent.Waiting)-len(sent.Released)), "step", "steps"),
			"their parents complete")
		return nil
	}
}

func workflowsCancel(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onWorkflow(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, id int64) error {
			n, err := client.Workflows().Cancel(ctx, pool, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "workflow %d cancelled: %s moved to the dead-letter table; running jobs finish their run and nothing runs after them\n", id, plural.Count(n, "job", "jobs"))
			return nil
		})
	}
}

// onWorkflow checks the one workflow id argument, connects and runs op.
func onWorkflow(ctx context.Context, db dbFlags, pos []string, op func(*admin.Client, *pgxpool.Pool, int64) error) error {
	if err := wantArgs(pos, 1, "one workflow id"); err != nil {
		return err
	}
	id, err := positiveID("workflow", pos[0])
	if err != nil {
		return err
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return op(client, pool, id)
}
