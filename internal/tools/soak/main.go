// Command soak runs Docket under a long mixed load with faults on a private
// PostgreSQL cluster, then checks that nothing was lost or run twice:
//
//	go run ./internal/tools/soak --duration 10m
//	go run ./internal/tools/soak --duration 10m --json
//
// It starts a private cluster (never the server of $DATABASE_URL: it
// restarts it) and --workers worker processes, each behind a fault proxy
// of its own. For --duration it offers --rate jobs per second: half
// transactional, 10% failing once, 1% always (dead after 2 attempts), 5%
// snoozing once, 10% under serial keys, 5% with unique keys; the workers
// also keep --schedules schedules firing every --schedule-every. Every
// --fault-every it injects a fault, in turn: a reset of every connection of
// a worker, kill -9 (worker 0, started again), refused connections for 10s,
// a 15s blackhole, 100ms ± 50ms latency for 15s, SIGSTOP for 10s (each at
// most three quarters of --fault-every); halfway it restarts the server.
//
// Then it drains and checks: every job exactly once in history or dead
// letters (dead only if meant to), none left or running, transactional
// effects exactly once, every schedule fired once in each whole period, no
// session or goroutine left by the workers, and the peak RSS of each worker
// that lived the whole soak at most 10% higher in the second half than in
// the first. It prints the figures and exits 1 if an invariant broke, 2 on
// a usage error.
//
// The soak is a tool of this repository, not part of the docket command:
// fault injection is not linked into the program users deploy.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/docketq/docket/internal/tools/faultsuite"
)

func main() {
	if faultsuite.IsWorker() {
		os.Exit(faultsuite.RunWorker())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, self))
}

// self is the program of a soak's worker process: this one again, which
// runs a worker when faultsuite starts it as one.
func self() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe)
}

// errUsage marks an error in the arguments: exit 2.
var errUsage = errors.New("usage")

// run runs the soak with args and returns the exit code.
func run(ctx context.Context, args []string, out, errOut io.Writer, worker func() *exec.Cmd) int {
	cfg, asJSON, err := parse(args, errOut)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(errOut, "soak:", err)
		return 2
	}
	cfg.Command, cfg.Progress = worker, errOut
	fmt.Fprintln(errOut, "soak: starting a private PostgreSQL cluster; it is removed when the soak ends")
	res, err := faultsuite.Soak(ctx, cfg)
	if err != nil {
		fmt.Fprintln(errOut, "soak:", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(errOut, "soak:", err)
			return 1
		}
	} else {
		print(out, res)
	}
	if len(res.Violations) > 0 {
		fmt.Fprintln(errOut, "soak:", strings.Join(res.Violations, "; "))
		return 1
	}
	return 0
}

// parse reads the flags into the soak's configuration.
func parse(args []string, errOut io.Writer) (faultsuite.SoakConfig, bool, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(errOut)
	duration := fs.Duration("duration", faultsuite.DefaultSoakDuration, "how long jobs are offered")
	rate := fs.Int("rate", faultsuite.DefaultSoakRate, "jobs offered per second")
	workers := fs.Int("workers", faultsuite.DefaultSoakWorkers, "worker processes")
	concurrency := fs.Int("concurrency", faultsuite.DefaultSoakConcurrency, "handler slots per worker process")
	schedules := fs.Int("schedules", faultsuite.DefaultSoakSchedules, "schedules the workers keep (0: none)")
	every := fs.Duration("schedule-every", time.Minute, "the schedules' period: 1m, or whole seconds that divide a minute")
	faultEvery := fs.Duration("fault-every", faultsuite.DefaultSoakFaultEvery, "time between faults (0: no faults)")
	asJSON := fs.Bool("json", false, "print the result as one JSON document")
	if err := fs.Parse(args); err != nil {
		return faultsuite.SoakConfig{}, false, err
	}
	bad := func(format string, a ...any) (faultsuite.SoakConfig, bool, error) {
		return faultsuite.SoakConfig{}, false, fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	if *duration <= 0 || *faultEvery < 0 {
		return bad("--duration must be positive and --fault-every 0 or more")
	}
	for name, v := range map[string]int{"--rate": *rate, "--workers": *workers, "--concurrency": *concurrency} {
		if v < 1 {
			return bad("%s must be at least 1, got %d", name, v)
		}
	}
	if *schedules < 0 {
		return bad("--schedules must be 0 or more, got %d", *schedules)
	}
	if e := *every; e != time.Minute && (e < time.Second || e%time.Second != 0 || time.Minute%e != 0) {
		return bad("--schedule-every %s: want 1m or whole seconds that divide a minute", e)
	}
	n := *schedules
	if n == 0 {
		n = -1 // faultsuite's "none"
	}
	return faultsuite.SoakConfig{
		Duration: *duration, Rate: *rate, Workers: *workers, Concurrency: *concurrency,
		Schedules: n, ScheduleEvery: *every, FaultEvery: *faultEvery,
	}, *asJSON, nil
}

// print prints a soak's figures for a reader.
func print(out io.Writer, r *faultsuite.SoakResult) {
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
