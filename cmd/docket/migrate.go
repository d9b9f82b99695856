package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/internal/queue"
	"github.com/docketq/docket/outbox"
)

func runMigrate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlagSet("migrate", errOut)
	var db dbFlags
	db.register(fs)
	version := fs.Int("version", -1, "target version: up applies through it, down reverts above it (down default: one step), sql prints it")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: docket migrate up|down|list|sql [flags]")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one of up, down, list, sql", errUsage)
	}
	m, err := outbox.NewMigrator(db.schema)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if pos[0] == "sql" {
		v := *version
		if v < 0 {
			v = m.Latest()
		}
		for _, mig := range m.Migrations() {
			if mig.Version == v || *version < 0 {
				fmt.Fprintf(out, "-- %03d_%s.up.sql\n%s\n", mig.Version, mig.Name, mig.Up)
			}
		}
		if _, err := m.SQL(v, "up"); err != nil {
			return err
		}
		return nil
	}
	pool, err := connect(ctx, db.url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch pos[0] {
	case "up":
		v := *version
		if v < 0 {
			v = m.Latest()
		}
		done, err := m.UpTo(ctx, pool, v)
		if err != nil {
			return err
		}
		q, err := queue.New(db.schema, queue.Config{})
		if err != nil {
			return err
		}
		if err := q.EnsurePartitions(ctx, pool, time.Now(), 3); err != nil {
			return err
		}
		report(out, "applied", done)
	case "down":
		v := *version
		if v < 0 {
			list, err := m.List(ctx, pool)
			if err != nil {
				return err
			}
			v = 0
			for _, s := range list {
				if !s.AppliedAt.IsZero() && s.Version > v {
					v = s.Version
				}
			}
			v = max(v-1, 0)
		}
		done, err := m.Down(ctx, pool, v)
		if err != nil {
			return err
		}
		report(out, "reverted", done)
	case "list":
		list, err := m.List(ctx, pool)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
		for _, s := range list {
			at := "no"
			if !s.AppliedAt.IsZero() {
				at = s.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%03d\t%s\t%s\n", s.Version, s.Name, at)
		}
		return tw.Flush()
	default:
		return fmt.Errorf("%w: unknown migrate verb %q: want up, down, list or sql", errUsage, pos[0])
	}
	return nil
}

func report(out io.Writer, verb string, done []outbox.Migration) {
	if len(done) == 0 {
		fmt.Fprintf(out, "nothing %s: already at the target version\n", verb)
		return
	}
	for _, m := range done {
		fmt.Fprintf(out, "%s %s_%s\n", verb, strconv.Itoa(m.Version), m.Name)
	}
}
