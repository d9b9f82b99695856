package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/admin"
)

func limitsCommand() *command {
	return &command{
		name:    "limits",
		summary: "set, list or remove flow-control limits (rate and concurrency)",
		about: `A limit governs the jobs of one kind (--kind), of one queue (--queue), or
every job (neither); with --per-tenant it applies to each tenant on its own.
Workers in every process enforce it through the database from their next
poll on: at most --max-running jobs running at once, at most --rate jobs
started per --per. See docs/flow-control.md.`,
		verbs: []*command{
			{name: "set", summary: "create or replace a limit", args: "NAME", flags: limitsSet},
			{name: "list", summary: "list the limits and each key's running jobs and tokens", flags: limitsList},
			{name: "rm", summary: "remove a limit", args: "NAME", flags: limitsRemove},
		},
	}
}

func limitsSet(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	var l admin.Limit
	fs.StringVar(&l.Queue, "queue", "", "govern the jobs of this queue")
	fs.StringVar(&l.Kind, "kind", "", "govern the jobs of this kind")
	fs.BoolVar(&l.PerTenant, "per-tenant", false, "apply the limit to each tenant on its own")
	fs.IntVar(&l.MaxRunning, "max-running", 0, "most jobs running at once (0: no such limit)")
	fs.IntVar(&l.Rate, "rate", 0, "most jobs started per --per (0: no rate limit)")
	fs.DurationVar(&l.Per, "per", time.Second, "the interval of --rate")
	fs.IntVar(&l.Burst, "burst", 0, "most jobs started at once after a quiet spell (0: --rate)")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 1, "one limit name"); err != nil {
			return err
		}
		l.Name = pos[0]
		if l.Rate == 0 && l.Per == time.Second {
			l.Per = 0 // the flag's default means nothing without --rate
		}
		if err := l.Check(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := client.Limits().Set(ctx, pool, l); err != nil {
			return err
		}
		fmt.Fprintf(out, "limit %s set: %s; workers apply it within one poll interval\n", l.Name, l.Describe())
		return nil
	}
}

// limitLine is one limit of limits list, with its keys' usage.
type limitLine struct {
	admin.Limit
	Keys []admin.LimitUsage
}

func limitsList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		limits, err := client.Limits().List(ctx, pool)
		if err != nil {
			return err
		}
		usage, err := client.Limits().Usage(ctx, pool)
		if err != nil {
			return err
		}
		lines := make([]limitLine, len(limits))
		for i, l := range limits {
			lines[i] = limitLine{Limit: l, Keys: []admin.LimitUsage{}}
			for _, u := range usage {
				if u.Limit == l.Name {
					lines[i].Keys = append(lines[i].Keys, u)
				}
			}
		}
		if *asJSON {
			list := make([]limitUsageJSON, len(lines))
			for i, l := range lines {
				list[i] = limitFrom(l.Limit, l.Keys)
			}
			return writeJSON(out, list, true)
		}
		if len(lines) == 0 {
			fmt.Fprintln(out, "no limits")
			return nil
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LIMIT\tRULE\tKEY\tRUNNING\tTOKENS")
		for _, l := range lines {
			rule := l.Describe()
			if len(l.Keys) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t-\t0\t-\n", l.Name, rule)
			}
			for _, k := range l.Keys {
				key, tokens := k.Tenant, "-"
				if !l.PerTenant {
					key = "(all)"
				} else if key == "" {
					key = "(no tenant)"
				}
				if k.Tokens >= 0 {
					tokens = fmt.Sprintf("%.1f", k.Tokens)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", l.Name, rule, key, k.Running, tokens)
			}
		}
		return tw.Flush()
	}
}

func limitsRemove(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 1, "one limit name"); err != nil {
			return err
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		removed, err := client.Limits().Remove(ctx, pool, pos[0])
		if err != nil {
			return err
		}
		if !removed {
			return fmt.Errorf("no limit named %q", pos[0])
		}
		fmt.Fprintf(out, "removed limit %s; workers stop applying it within one poll interval\n", pos[0])
		return nil
	}
}
