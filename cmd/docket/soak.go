package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/docketq/docket/internal/faultsuite"
)

// soakCommand runs the soak: load, faults and a server restart on a
// private cluster, then the invariants checked. See faultsuite.Soak.
func soakCommand() *command {
	return &command{
		name:    "soak",
		summary: "run jobs under faults for a while on a private cluster, then check nothing was lost",
		about: `The soak starts a private PostgreSQL cluster (never the server of
--database-url or $DATABASE_URL: it restarts it) and --workers worker
processes, each behind a fault proxy of its own. For --duration it offers
--rate jobs per second: half transactional, 10% failing once, 1% always
(dead after 2 attempts), 5% snoozing once, 10% under serial keys, 5% with
unique keys; the workers also keep --schedules schedules firing every
--schedule-every. Every --fault-every it injects a fault, in turn: a reset
of every connection of a worker, kill -9 (worker 0, started again), refused
connections for 10s, a 15s blackhole, 100ms +/- 50ms latency for 15s, SIGSTOP
for 10s (each at most three quarters of --fault-every); halfway it restarts
the server.

Then it drains and checks: every job exactly once in history or dead
letters (dead only if meant to), none left or running, transactional
effects exactly once, every schedule fired once in each whole period, no
session or goroutine left by the workers, and the peak RSS of each worker
that lived the whole soak at most 10% higher in the second half than in the
first. It prints the figures (--json: one JSON document) and exits 1 if an
invariant broke.`,
		flags: soakFlags,
	}
}

func soakFlags(fs *flag.FlagSet) action {
	duration := fs.Duration("duration", faultsuite.DefaultSoakDuration, "how long jobs are offered")
	rate := fs.Int("rate", faultsuite.DefaultSoakRate, "jobs offered per second")
	workers := fs.Int("workers", faultsuite.DefaultSoakWorkers, "worker processes")
	concurrency := fs.Int("concurrency", faultsuite.DefaultSoakConcurrency, "handler slots per worker process")
	schedules := fs.Int("schedules", faultsuite.DefaultSoakSchedules, "schedules the workers keep (0: none)")
	every := fs.Duration("schedule-every", time.Minute, "the schedules' period: 1m, or whole seconds that divide a minute")
	faultEvery := fs.Duration("fault-every", faultsuite.DefaultSoakFaultEvery, "time between faults (0: no faults)")
	asJSON := fs.Bool("json", false, "print the result as one JSON document")
	serveWorker := fs.Bool("serve-worker", false, "internal: run one worker process of the soak")
	return func(ctx context.Context, pos []string, out, errOut io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *serveWorker {
			if !faultsuite.IsWorker() {
				return fmt.Errorf("%w: --serve-worker is for the soak's own worker processes", errUsage)
			}
			if code := faultsuite.RunWorker(); code != 0 {
				return &exitError{code: code, msg: "worker process failed"}
			}
			return nil
		}
		if *duration <= 0 || *faultEvery < 0 {
			return fmt.Errorf("%w: --duration must be positive and --fault-every 0 or more", errUsage)
		}
		for name, v := range map[string]int{"--rate": *rate, "--workers": *workers, "--concurrency": *concurrency} {
			if v < 1 {
				return fmt.Errorf("%w: %s must be at least 1, got %d", errUsage, name, v)
			}
		}
		if *schedules < 0 {
			return fmt.Errorf("%w: --schedules must be 0 or more, got %d", errUsage, *schedules)
		}
		if e := *every; e != time.Minute && (e < time.Second || e%time.Second != 0 || time.Minute%e != 0) {
			return fmt.Errorf("%w: --schedule-every %s: want 1m or whole seconds that divide a minute", errUsage, e)
		}
		n := *schedules
		if n == 0 {
			n = -1 // faultsuite's "none"
		}
		fmt.Fprintln(errOut, "docket soak: starting a private PostgreSQL cluster; it is removed when the soak ends")
		res, err := faultsuite.Soak(ctx, faultsuite.SoakConfig{
			Duration: *duration, Rate: *rate, Workers: *workers, Concurrency: *concurrency,
			Schedules: n, ScheduleEvery: *every, FaultEvery: *faultEvery,
			Command: soakWorker, Progress: errOut,
		})
		if err != nil {
			return err
		}
		if *asJSON {
			if err := writeJSON(out, res, true); err != nil {
				return err
			}
		} else {
			printSoak(out, res)
		}
		if len(res.Violations) > 0 {
			return errors.New(strings.Join(res.Violations, "; "))
		}
		return nil
	}
}

// soakWorker is the command of a soak's worker process: this program
// again, with --serve-worker.
func soakWorker() *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	return exec.Command(self, "soak", "--serve-worker")
}

// printSoak prints a soak's figures for a reader.
func printSoak(out io.Writer, r *faultsuite.SoakResult) {
	c := r.Counts
	fmt.Fprintf(out, "offered      %d jobs in %.0fs (%.0f jobs/s); drained %.1fs after\n", c.Enqueued, r.DurationSeconds, r.OfferedPerSec, r.DrainSeconds)
	fmt.Fprintf(out, "finished     %d done, %d dead (%d meant to), %d left, %d running; %d done after more than one attempt\n",
		c.Done, c.Dead, c.Doomed, c.Left, c.Running, c.Retried)
	fmt.Fprintf(out, "exactly once %d rows for %d job ids and %d job numbers\n", c.Finished, c.FinishedIDs, c.FinishedNs)
	fmt.Fprintf(out, "effects      transactional %d for %d jobs done; plain %d for %d jobs done (%d without one)\n",
		c.TxEffects, c.TxDone, c.PlainEffects, c.PlainDone, c.PlainMissing)
	fmt.Fprintf(out, "schedules    %d over %d whole periods: %d runs recorded, %d twice\n", r.Schedules, r.Periods, r.Ticks, r.DuplicateTicks)
	var faults []string
	for _, f := range r.Faults {
		faults = append(faults, fmt.Sprintf("%.0fs %s", f.AtSeconds, f.Fault))
	}
	fmt.Fprintf(out, "faults       %d: %s\n", len(r.Faults), strings.Join(faults, ", "))
	for _, w := range r.RSS {
		fmt.Fprintf(out, "worker %d RSS peak %.1f MB in the first half, %.1f MB in the second\n", w.Worker, w.FirstHalfMB, w.SecondMB)
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(out, "invariants   all held")
	}
	for _, v := range r.Violations {
		fmt.Fprintln(out, "VIOLATION   ", v)
	}
}
