package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/docketq/docket/admin"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

func jobsCommand() *command {
	return &command{
		name:    "jobs",
		summary: "list, show, cancel or retry jobs",
		verbs: []*command{
			{name: "list", summary: "list jobs newest first, one page at a time (--after continues)", flags: jobsList},
			{name: "show", summary: "show one job wherever it is; the payload and result only with --payload", args: "ID", flags: jobsShow},
			{name: "cancel", summary: "move a job to the dead-letter table (reason cancelled); a running one once its worker stopped it", args: "ID", flags: jobsCancel},
			{name: "retry", summary: "run a dead job again (replayed) or a scheduled one now", args: "ID", flags: jobsRetry},
		},
	}
}

func jobsCancel(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	note := fs.String("note", "cancelled by operator", "the error recorded on the cancelled job")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onJob(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, id int64) error {
			running, err := client.Jobs().Cancel(ctx, pool, id, *note)
			if err != nil {
				return err
			}
			if running {
				fmt.Fprintf(out, "job %d is running: cancellation requested; its worker stops it and it ends in the dead-letter table\n", id)
				return nil
			}
			fmt.Fprintf(out, "job %d cancelled: it is in the dead-letter table\n", id)
			return nil
		})
	}
}

func jobsRetry(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onJob(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, id int64) error {
			if err := client.Jobs().Retry(ctx, pool, id); err != nil {
				return err
			}
			fmt.Fprintf(out, "job %d is ready to run\n", id)
			return nil
		})
	}
}

// onJob checks the one job id argument, connects and runs op.
func onJob(ctx context.Context, db dbFlags, pos []string, op func(*admin.Client, *pgxpool.Pool, int64) error) error {
	if err := wantArgs(pos, 1, "one job id"); err != nil {
		return err
	}
	ids, err := jobIDs(pos)
	if err != nil {
		return err
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return op(client, pool, ids[0])
}

func jobsList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	var f admin.JobFilter
	fs.StringVar(&f.State, "state", "", "one of "+strings.Join(admin.JobStates(), ", ")+" (default: every live job)")
	fs.StringVar(&f.Queue, "queue", "", "only jobs of this queue")
	fs.StringVar(&f.Kind, "kind", "", "only jobs of this kind")
	fs.StringVar(&f.Tenant, "tenant", "", "only jobs of this tenant")
	fs.StringVar(&f.SerialKey, "serial-key", "", "only jobs of this serial key")
	fs.StringVar(&f.ErrorContains, "error", "", "only jobs whose last error contains this text (any case)")
	fs.Int64Var(&f.After, "after", 0, "continue after this job id (the last id of the previous page)")
	fs.IntVar(&f.Limit, "limit", 50, fmt.Sprintf("page size, 1 to %d", admin.MaxJobPage))
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return fmt.Errorf("%w (list takes no ids; use show ID)", err)
		}
		if f.Limit == 0 {
			return fmt.Errorf("%w: --limit 0: want 1 to %d", errUsage, admin.MaxJobPage)
		}
		if err := f.Check(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		page, err := client.Jobs().List(ctx, pool, f)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, jobPageFrom(page), true)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tKIND\tTENANT\tATTEMPTS\tRUN AT\tERROR")
		for _, j := range page.Jobs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.State, j.Queue, j.Kind, dash(j.Tenant),
				j.Attempts, j.MaxAttempts, fmtTime(j.RunAt), dash(oneLine(j.LastError, 60)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		switch {
		case page.Next != 0:
			fmt.Fprintf(out, "more: --after %d\n", page.Next)
		case len(page.Jobs) == 0:
			fmt.Fprintln(out, "(no jobs)")
		}
		return nil
	}
}

func jobsShow(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	payload := fs.Bool("payload", false, "include the payload and the result (they may hold personal data)")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onJob(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, id int64) error {
			j, err := client.Jobs().Get(ctx, pool, id, *payload)
			if err != nil {
				return err
			}
			attempts, err := client.Jobs().Attempts(ctx, pool, id)
			if err != nil && !errors.Is(err, admin.ErrJobNotFound) { // gone since Get: nothing to list
				return err
			}
			if *asJSON {
				d := jobFromInfo(j)
				d.AttemptHistory = attemptsFrom(attempts)
				return writeJSON(out, d, true)
			}
			printJob(out, j, attempts, *payload)
			return nil
		})
	}
}

func printJob(out io.Writer, j admin.JobInfo, attempts []admin.Attempt, payload bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" && v != "-" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("id", fmt.Sprint(j.ID))
	row("state", j.State)
	row("queue", j.Queue)
	row("kind", j.Kind)
	row("priority", fmt.Sprint(j.Priority))
	row("tenant", j.Tenant)
	row("serial key", j.SerialKey)
	row("unique key", j.UniqueKey)
	row("attempts", fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts))
	row("created", fmtTime(j.CreatedAt))
	row("run at", fmtTime(j.RunAt))
	row("started", fmtTime(j.StartedAt))
	row("lease until", fmtTime(j.LeaseUntil))
	if j.State == admin.StateDead {
		row("died", fmtTime(j.FinishedAt))
	} else {
		row("finished", fmtTime(j.FinishedAt))
	}
	row("reason", j.Reason)
	if !j.CancelRequestedAt.IsZero() {
		row("cancel requested", fmtTime(j.CancelRequestedAt))
	}
	if p := j.Progress; p != nil {
		row("progress", strings.TrimSpace(string(p.Value)+" "+p.Message))
		row("progress at", fmtTime(p.At))
	}
	if j.State == admin.StateRunning {
		holder := j.LockedBy.String()
		if j.WorkerHost != "" {
			holder += fmt.Sprintf(" (%s pid %d)", j.WorkerHost, j.WorkerPID)
		}
		row("lease holder", holder)
	}
	for _, k := range slices.Sorted(maps.Keys(j.Meta)) {
		row("meta "+k, j.Meta[k])
	}
	tw.Flush()
	if j.LastError != "" {
		fmt.Fprintf(out, "last error:\n%s\n", j.LastError)
	}
	printAttempts(out, attempts)
	if payload {
		fmt.Fprintf(out, "payload:\n%s\n", j.Payload)
		if j.Result != nil {
			var pretty bytes.Buffer
			if json.Indent(&pretty, j.Result, "", "  ") != nil {
				pretty.Reset()
				pretty.Write(j.Result)
			}
			fmt.Fprintf(out, "result:\n%s\n", pretty.String())
		}
	} else {
		fmt.Fprintln(out, "payload: hidden (--payload shows it and the result)")
	}
}

// printAttempts prints a job's runs, oldest first, as a table; each error
// on one line, cut at 120 characters (--json has them whole).
func printAttempts(out io.Writer, attempts []admin.Attempt) {
	if len(attempts) == 0 {
		return
	}
	fmt.Fprintln(out, "attempts:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tSTARTED\tFINISHED\tWORKER\tOUTCOME\tERROR")
	for _, a := range attempts {
		worker := "-"
		if a.Worker != uuid.Nil {
			worker = a.Worker.String()[:8]
		}
		if a.WorkerHost != "" {
			worker += fmt.Sprintf(" (%s pid %d)", a.WorkerHost, a.WorkerPID)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, dash(fmtTime(a.StartedAt)), dash(fmtTime(a.FinishedAt)),
			worker, a.Outcome, dash(oneLine(a.Error, 120)))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
