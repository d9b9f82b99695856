package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/jackc/pgx/v5/pgxpool"
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

// openSchedules connects and returns the schedule operations of the schema
// and the pool they run through.
func openSchedules(ctx context.Context, db dbFlags) (admin.Schedules, *pgxpool.Pool, error) {
	ops, pool, err := db.open(ctx)
	if err != nil {
		return admin.Schedules{}, nil, err
	}
	return ops.Schedules(), pool, nil
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
		svc, pool, err := openSchedules(ctx, db)
		if err != nil {
			return err
		}
		defer pool.Close()
		var list []admin.ScheduleInfo
		if *stale > 0 {
			list, err = svc.Stale(ctx, pool, *stale)
		} else {
			list, err = svc.List(ctx, pool)
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
			svc, pool, err := openSchedules(ctx, db)
			if err != nil {
				return err
			}
			defer pool.Close()
			switch verb {
			case "pause":
				err = svc.Pause(ctx, pool, name)
			case "resume":
				err = svc.Resume(ctx, pool, name)
			case "remove":
				err = svc.Remove(ctx, pool, name)
			case "trigger":
				id, err := svc.Trigger(ctx, pool, name)
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

func printSchedules(out io.Writer, list []admin.ScheduleInfo) {
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
