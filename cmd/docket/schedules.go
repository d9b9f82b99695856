package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
)

// runSchedules is `docket schedules list|pause|resume|trigger|remove`.
func runSchedules(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlagSet("schedules", errOut)
	var db dbFlags
	db.register(fs)
	stale := fs.Duration("stale", 0, "list: only schedules no process registered for this long")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: docket schedules list [--stale D] | pause NAME | resume NAME | trigger NAME | remove NAME [--database-url URL] [--schema S]")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want list, pause, resume, trigger or remove", errUsage)
	}
	verb := pos[0]
	var name string
	switch verb {
	case "list":
		if len(pos) != 1 {
			return fmt.Errorf("%w: list takes no arguments", errUsage)
		}
	case "pause", "resume", "trigger", "remove":
		if len(pos) != 2 {
			return fmt.Errorf("%w: %s takes one schedule name", errUsage, verb)
		}
		name = pos[1]
	default:
		return fmt.Errorf("%w: unknown verb %q: want list, pause, resume, trigger or remove", errUsage, verb)
	}
	pool, err := connect(ctx, db.url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	ob, err := outbox.New(outbox.Config{Schema: db.schema})
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	svc, err := schedule.New(schedule.Config{DB: pool, Outbox: ob, ReconcileInterval: -1})
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		var list []schedule.Info
		if *stale > 0 {
			list, err = svc.Stale(ctx, *stale)
		} else {
			list, err = svc.List(ctx)
		}
		if err != nil {
			return err
		}
		printSchedules(out, list)
		return nil
	case "pause":
		err = svc.Pause(ctx, name)
	case "resume":
		err = svc.Resume(ctx, name)
	case "remove":
		err = svc.Remove(ctx, name)
	case "trigger":
		var id int64
		if id, err = svc.Trigger(ctx, name); err == nil {
			fmt.Fprintf(out, "schedule %s: triggered run enqueued as job %d\n", name, id)
			return nil
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "schedule %s: %sd\n", name, verb)
	return nil
}

func printSchedules(out io.Writer, list []schedule.Info) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPEC\tKIND\tQUEUE\tSTATE\tNEXT FIRE\tLAST FIRE\tREGISTERED")
	for _, s := range list {
		state := "active"
		if s.Paused {
			state = "paused"
		}
		spec := s.Spec
		if s.TimeZone != "" {
			spec += " (" + s.TimeZone + ")"
		}
		queue := s.Queue
		if queue == "" {
			queue = "-" // the kind's registered queue, else default
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, spec, s.Kind, queue, state,
			fmtTime(s.NextFire), fmtTime(s.LastFire), fmtTime(s.RegisteredAt))
	}
	tw.Flush()
	if len(list) == 0 {
		fmt.Fprintln(out, "(no schedules)")
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
