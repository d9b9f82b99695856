package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
)

func schedulesCommand() *command {
	return &command{
		name:    "schedules",
		summary: "list, pause, resume, trigger or remove recurring schedules",
		verbs: []*command{
			{name: "list", summary: "list the schedules with their next and last fire", flags: schedulesList},
			{name: "pause", summary: "stop a schedule firing until resumed", args: "NAME", flags: scheduleOp("pause")},
			{name: "resume", summary: "let a paused schedule fire again", args: "NAME", flags: scheduleOp("resume")},
			{name: "trigger", summary: "enqueue one run of a schedule now", args: "NAME", flags: scheduleOp("trigger")},
			{name: "remove", summary: "delete a schedule", args: "NAME", flags: scheduleOp("remove")},
		},
	}
}

// openSchedules connects and returns the schedule service of the schema.
func openSchedules(ctx context.Context, db dbFlags) (*schedule.Service, func(), error) {
	ob, err := outbox.New(outbox.Config{Schema: db.schema})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	pool, err := connect(ctx, db.url, 2, db.pgbouncer)
	if err != nil {
		return nil, nil, err
	}
	svc, err := schedule.New(schedule.Config{DB: pool, Outbox: ob, ReconcileInterval: -1})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return svc, pool.Close, nil
}

func schedulesList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	stale := fs.Duration("stale", 0, "only schedules no process registered for this long")
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *stale < 0 {
			return fmt.Errorf("%w: --stale %s: want a positive duration", errUsage, *stale)
		}
		svc, done, err := openSchedules(ctx, db)
		if err != nil {
			return err
		}
		defer done()
		var list []schedule.Info
		if *stale > 0 {
			list, err = svc.Stale(ctx, *stale)
		} else {
			list, err = svc.List(ctx)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, schedulesFrom(list), true)
		}
		printSchedules(out, list)
		return nil
	}
}

// scheduleOp is the leaf of a verb that acts on one schedule by name.
func scheduleOp(verb string) func(fs *flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		var db dbFlags
		db.register(fs)
		return func(ctx context.Context, pos []string, out, _ io.Writer) error {
			if err := wantArgs(pos, 1, "one schedule name"); err != nil {
				return err
			}
			name := pos[0]
			svc, done, err := openSchedules(ctx, db)
			if err != nil {
				return err
			}
			defer done()
			switch verb {
			case "pause":
				err = svc.Pause(ctx, name)
			case "resume":
				err = svc.Resume(ctx, name)
			case "remove":
				err = svc.Remove(ctx, name)
			case "trigger":
				id, err := svc.Trigger(ctx, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "schedule %s: triggered run enqueued as job %d\n", name, id)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "schedule %s: %sd\n", name, verb)
			return nil
		}
	}
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
		switch {
		case s.Run != nil:
			queue = s.Run.Queue // resolved from the kind's options at registration
		case queue == "":
			queue = "-" // the kind's registered queue, else default: unknown here
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
