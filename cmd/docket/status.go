package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// thresholdFlags are the warning thresholds of status and metrics serve.
type thresholdFlags struct{ th admin.Thresholds }

func (f *thresholdFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.th.Lag, "lag", time.Minute, "warn when a queue's oldest due job waited longer")
	fs.DurationVar(&f.th.Horizon, "horizon", 5*time.Minute, "warn when a transaction held back the vacuum horizon longer")
	fs.Int64Var(&f.th.HorizonXIDs, "horizon-xids", 1_000_000, "warn when a replication slot or standby holds an xmin this many transactions old")
	fs.Int64Var(&f.th.DeadTuples, "dead-tuples", 100_000, "warn when a table has this many dead tuples (and at least a fifth of its live ones)")
	fs.DurationVar(&f.th.ClaimP99, "claim-p99", 250*time.Millisecond, "warn when a live worker's claim p99 is above this")
}

// check refuses a threshold that is not positive (zero would quietly mean
// admin.Thresholds' default), before anything connects.
func (f *thresholdFlags) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--lag", f.th.Lag}, {"--horizon", f.th.Horizon}, {"--claim-p99", f.th.ClaimP99}} {
		if d.v <= 0 {
			return fmt.Errorf("%w: %s %s: want a positive threshold", errUsage, d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"--horizon-xids", f.th.HorizonXIDs}, {"--dead-tuples", f.th.DeadTuples}} {
		if n.v <= 0 {
			return fmt.Errorf("%w: %s %d: want a positive threshold", errUsage, n.name, n.v)
		}
	}
	return nil
}

func statusCommand() *command {
	return &command{
		name:    "status",
		summary: "queue health: backlog, lag, throughput, DLQ, vacuum, stuck leases, warnings",
		about: `Per queue: backlog, lag, throughput, dead-letter queue; tables' vacuum state;
stuck leases, unserved kinds and schedules, what holds the vacuum horizon; and
warnings.`,
		flags: func(fs *flag.FlagSet) action {
			var db dbFlags
			db.register(fs)
			var th thresholdFlags
			th.register(fs)
			asJSON := fs.Bool("json", false, "print the status as JSON (with --watch, one line per snapshot)")
			watch := fs.Duration("watch", 0, "refresh every interval until interrupted (e.g. 2s); 0 prints once")
			return func(ctx context.Context, pos []string, out, _ io.Writer) error {
				if err := wantArgs(pos, 0, ""); err != nil {
					return err
				}
				if err := th.check(); err != nil {
					return err
				}
				if *watch < 0 {
					return fmt.Errorf("%w: --watch %s: want 0 (once) or a positive interval", errUsage, *watch)
				}
				client, pool, err := db.open(ctx)
				if err != nil {
					return err
				}
				defer pool.Close()
				for {
					s, err := client.Status(ctx, pool, th.th)
					if err != nil {
						if *watch > 0 && ctx.Err() != nil {
							return nil // interrupted while watching
						}
						return err
					}
					if *watch > 0 && !*asJSON {
						fmt.Fprint(out, "\033[H\033[2J") // clear the terminal
					}
					if *asJSON {
						err = writeJSON(out, statusFrom(s), *watch == 0)
					} else {
						err = printStatus(out, s)
					}
					if err != nil {
						return err
					}
					if *watch <= 0 {
						return nil
					}
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(*watch):
					}
				}
			}
		},
	}
}

// printStatus writes the compact text form of a status snapshot, with the
// relay's backlog where the events tables exist.
func printStatus(out io.Writer, s *admin.Status) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tREADY\tSCHED\tRUNNING\tLAG\tDONE 1m/1h\tRETRIES 1m/1h\tDEAD 1m/1h\tDLQ\tDLQ 24h")
	for _, q := range s.Queues {
		name := q.Queue
		if q.Paused {
			name += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d/%d\t%d/%d\t%d/%d\t%d\t%+d\n", name, q.Ready, q.Scheduled, q.Running,
			short(q.Lag), q.Completed1m, q.Completed1h, q.Retries1m, q.Retries1h, q.Dead1m, q.Dead1h, q.DLQSize, q.DLQDelta24h)
	}
	if len(s.Queues) == 0 {
		fmt.Fprintln(tw, "(no queues yet)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TABLE\tLIVE\tDEAD\tLAST VACUUM\tLAST ANALYZE")
	for _, t := range s.Tables {
		if strings.HasPrefix(t.Table, "docket_jobs_done_") && t.LiveTuples == 0 && t.DeadTuples == 0 {
			continue // empty history partitions (future days)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", t.Table, t.LiveTuples, t.DeadTuples,
			ago(s.At, t.LastVacuumed()), ago(s.At, later(t.LastAnalyze, t.LastAutoanalyze)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	live := 0
	for _, w := range s.Workers {
		if w.Live {
			live++
		}
	}
	fmt.Fprintf(out, "\nworkers: %d live", live)
	for _, w := range s.Workers {
		if w.Live && w.Claims > 0 {
			fmt.Fprintf(out, "\n  %s pid %d, %s: claim p50 %s p95 %s p99 %s (%s)", w.Host, w.PID, plural.Count(int64(w.Slots), "slot", "slots"),
				ms(w.ClaimP50), ms(w.ClaimP95), ms(w.ClaimP99), plural.Count(w.Claims, "claim", "claims"))
		}
	}
	fmt.Fprintf(out, "\nstuck leases: %d\n", s.StuckCount)
	if ev := s.Events; ev != nil {
		lag := "none"
		if !ev.OldestPending.IsZero() {
			lag = short(ev.Lag)
		}
		fmt.Fprintf(out, "events: %d pending, lag %s, %d dead (%s blocked), %s live\n",
			ev.Pending, lag, ev.Dead, plural.Count(ev.BlockedKeys, "key", "keys"), plural.Count(ev.Relays, "relay", "relays"))
	}
	if h, ok := s.OldestHorizon(); ok {
		age := fmt.Sprintf("%d xids", h.XIDAge)
		if h.AgeKnown {
			age = short(h.Age) + ", " + age
		}
		fmt.Fprintf(out, "vacuum horizon: held by %s for %s\n", h.Describe(), age)
	} else {
		fmt.Fprintln(out, "vacuum horizon: not held")
	}
	if len(s.Warnings) == 0 {
		fmt.Fprintln(out, "\nno warnings")
		return nil
	}
	fmt.Fprintln(out, "\nWARNINGS")
	for _, w := range s.Warnings {
		fmt.Fprintf(out, "  [%s] %s\n", w.Code, w.Message)
	}
	return nil
}

func short(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return short(now.Sub(t)) + " ago"
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
