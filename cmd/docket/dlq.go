package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/admin"
)

// dlqFilter are the selection flags of dlq list and replay.
type dlqFilter struct {
	kind, queue, errLike, since string
	limit                       int
}

func (f *dlqFilter) register(fs *flag.FlagSet, limit int) {
	fs.StringVar(&f.kind, "kind", "", "only jobs of this kind")
	fs.StringVar(&f.queue, "queue", "", "only jobs of this queue")
	fs.StringVar(&f.errLike, "error", "", "only jobs whose last error matches this SQL LIKE pattern (e.g. '%timeout%')")
	fs.StringVar(&f.since, "since", "", "only jobs that died within this duration (e.g. 24h) or since this RFC 3339 time")
	fs.IntVar(&f.limit, "limit", limit, "at most this many jobs (-1: no limit)")
}

func (f *dlqFilter) filter(now time.Time) (admin.DeadFilter, error) {
	out := admin.DeadFilter{Kind: f.kind, Queue: f.queue, ErrorLike: f.errLike, Limit: f.limit}
	if f.limit == 0 || f.limit < -1 {
		return out, fmt.Errorf("%w: --limit %d: want -1 (no limit) or 1 or more", errUsage, f.limit)
	}
	if f.since != "" {
		t, err := parseSince(now, f.since)
		if err != nil {
			return out, err
		}
		out.Since = t
	}
	return out, nil
}

func (f *dlqFilter) empty() bool {
	return f.kind == "" && f.queue == "" && f.errLike == "" && f.since == ""
}

// parseSince reads a duration back from now ("24h") or an RFC 3339 time.
func parseSince(now time.Time, s string) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither a duration (24h) nor an RFC 3339 time", errUsage, s)
}

// parseRate reads "100", "100/s" or "6000/m" as jobs per second.
func parseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: rate %q: want a positive number per second, like 100/s", errUsage, s)
	}
	switch unit {
	case "", "s":
		return n, nil
	case "m":
		return n / 60, nil
	}
	return 0, fmt.Errorf("%w: rate %q: unit must be /s or /m", errUsage, s)
}

func dlqCommand() *command {
	return &command{
		name:    "dlq",
		summary: "dead-letter queue: list, show, replay (rate-limited), purge",
		verbs: []*command{
			{name: "list", summary: "list dead jobs, newest first, without payloads", flags: dlqList},
			{name: "show", summary: "show one dead job; the payload only with --payload", args: "ID", flags: dlqShow},
			{name: "replay", summary: "put dead jobs back in their queue at a limited rate", args: "[ID...]", flags: dlqReplay},
			{name: "purge", summary: "delete dead jobs older than --older-than", args: "--older-than DURATION", flags: dlqPurge},
		},
	}
}

// jobIDs reads job ids from positional arguments.
func jobIDs(pos []string) ([]int64, error) {
	var ids []int64
	for _, s := range pos {
		id, err := positiveID("job", s)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func dlqList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	var f dlqFilter
	f.register(fs, 100)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return fmt.Errorf("%w (list takes no ids; use show ID)", err)
		}
		filter, err := f.filter(time.Now())
		if err != nil {
			return err
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		dead, err := client.DeadLetters().List(ctx, pool, filter)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, deadJobsFrom(dead), true)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tQUEUE\tKIND\tATTEMPTS\tDIED\tREASON\tERROR")
		for _, d := range dead {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", d.ID, d.Queue, d.Kind, d.Attempts, d.MaxAttempts,
				d.DeadAt.UTC().Format(time.RFC3339), d.Reason, oneLine(d.LastError, 80))
		}
		return tw.Flush()
	}
}

func dlqShow(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	payload := fs.Bool("payload", false, "include the payload (it may hold personal data)")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
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
		d, err := client.DeadLetters().Get(ctx, pool, ids[0], *payload)
		if err != nil {
			return err
		}
		attempts, err := client.Jobs().Attempts(ctx, pool, ids[0])
		if err != nil && !errors.Is(err, admin.ErrJobNotFound) { // replayed since Get: nothing to list
			return err
		}
		if *asJSON {
			j := jobFromDead(d)
			j.AttemptHistory = attemptsFrom(attempts)
			return writeJSON(out, j, true)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "id\t%d\nqueue\t%s\nkind\t%s\npriority\t%d\ntenant\t%s\nunique key\t%s\nattempts\t%d of %d\ncreated\t%s\ndied\t%s\nreason\t%s\n",
			d.ID, d.Queue, d.Kind, d.Priority, d.Tenant, d.UniqueKey, d.Attempts, d.MaxAttempts,
			d.CreatedAt.UTC().Format(time.RFC3339), d.DeadAt.UTC().Format(time.RFC3339), d.Reason)
		for k, v := range d.Meta {
			fmt.Fprintf(tw, "meta %s\t%s\n", k, v)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(out, "last error:\n%s\n", d.LastError)
		printAttempts(out, attempts)
		if *payload {
			fmt.Fprintf(out, "payload:\n%s\n", d.Payload)
		} else {
			fmt.Fprintln(out, "payload: hidden (--payload shows it)")
		}
		return nil
	}
}

func dlqReplay(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	var f dlqFilter
	f.register(fs, 100)
	rate := fs.String("rate", "10/s", "jobs per second put back in the queue (N/s or N/m)")
	dryRun := fs.Bool("dry-run", false, "say what would be replayed, do nothing")
	all := fs.Bool("all", false, "allow replaying without any selection")
	return func(ctx context.Context, pos []string, out, errOut io.Writer) error {
		ids, err := jobIDs(pos)
		if err != nil {
			return err
		}
		if len(ids) == 0 && f.empty() && !*all {
			return fmt.Errorf("%w: replay needs ids, a selection (--kind, --queue, --error, --since) or --all", errUsage)
		}
		perSecond, err := parseRate(*rate)
		if err != nil {
			return err
		}
		filter, err := f.filter(time.Now())
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			filter.IDs = ids
			filter.Limit = -1
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		if *dryRun {
			dead, err := client.DeadLetters().List(ctx, pool, filter)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "would replay %d dead jobs at %g/s (about %s)\n", len(dead), perSecond,
				short(time.Duration(float64(len(dead))/perSecond*float64(time.Second))))
			return nil
		}
		last := time.Now()
		res, err := client.DeadLetters().Replay(ctx, pool, filter, admin.ReplayOptions{Rate: perSecond, Progress: func(r admin.ReplayResult) {
			if time.Since(last) >= 5*time.Second {
				last = time.Now()
				fmt.Fprintf(errOut, "replayed %d so far\n", len(r.Replayed))
			}
		}})
		fmt.Fprintf(out, "replayed %d dead jobs", len(res.Replayed))
		if len(res.Skipped) > 0 {
			fmt.Fprintf(out, "; left %d in the dead-letter table (unique key held by a live job, or taken by another replay)", len(res.Skipped))
		}
		fmt.Fprintln(out)
		return err
	}
}

func dlqPurge(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	olderThan := fs.Duration("older-than", 0, "delete dead jobs that died longer ago than this (e.g. 720h); required")
	dryRun := fs.Bool("dry-run", false, "say what would be deleted, do nothing")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *olderThan <= 0 {
			return fmt.Errorf("%w: purge needs --older-than, e.g. 720h", errUsage)
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		cutoff := time.Now().Add(-*olderThan)
		if *dryRun {
			dead, err := client.DeadLetters().List(ctx, pool, admin.DeadFilter{Before: cutoff, Limit: -1})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "would delete %d dead jobs that died before %s\n", len(dead), cutoff.UTC().Format(time.RFC3339))
			return nil
		}
		n, err := client.DeadLetters().Purge(ctx, pool, cutoff)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "deleted %d dead jobs that died before %s\n", n, cutoff.UTC().Format(time.RFC3339))
		return nil
	}
}

// oneLine shortens an error to its first line and at most n runes.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
