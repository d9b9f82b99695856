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
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/docketq/docket/internal/tools/bench"
)

// benchScenarios describes each scenario for bench's help.
var benchScenarios = []struct{ name, about string }{
	{bench.ScenarioInsert, "insert --jobs jobs in batches of --batch (--inserters connections at once)"},
	{bench.ScenarioDrain, "fill --jobs jobs, then time --processes worker processes draining them"},
	{bench.ScenarioSustained, "--producers enqueue at --rate for --duration while workers run; latency percentiles"},
	{bench.ScenarioIdle, "latency of one job every 100ms on an otherwise empty queue (--idle-jobs, default 200)"},
	{bench.ScenarioWorkflows, "--jobs workflows (default 10,000; 2,000 under all) of a 3-step chain, each step recording a result its child reads; steps/s against as many no-op jobs"},
	{bench.ScenarioSerial, "--jobs jobs (at most 20,000 under all) round robin over --keys serial keys, handlers sleeping --handler-time; jobs/s, hand-off p50/p99 and the ratio to as many jobs without keys"},
	{bench.ScenarioHandlers, "fill --jobs jobs of random priority, then time --workers slots (default 32) whose handlers sleep --handler-min..--handler-max; fraction of the bound slots / mean handler time"},
	{bench.ScenarioLimit, "PostgreSQL's own limits: the drain's claim and completion statements alone (500 per claim, 2 connections) and bare COPY of --jobs rows, in one COPY and in COPYs of --batch"},
	{bench.ScenarioAll, "each of " + strings.Join(bench.Scenarios, ", ") + ", then relay, once, in that order"},
	{bench.ScenarioRelay, "outbox relay to NATS (--nats-url): --jobs events drained by --relays relay processes, from their start and warm, vs a direct JetStream publish, then commit->delivery and CPU at --rate for --duration"},
	{bench.ScenarioHeldXmin, "hold a transaction open for --held between --baseline and --recovery; one line per --window (--held-limited-rate: also a rate-limited kind)"},
	{bench.ScenarioMultiDB, "start private clusters and drain --jobs jobs (default 20,000) in each of 1, 2, … of them at once (--databases) from one process, one client per database, handlers sleeping --handler-time"},
	{bench.ScenarioFlowControl, "drain --jobs jobs, --limited-share of them a limited kind, with no limit, an unused rate limit, --limit-running per tenant, and --limit-rate; limited and ordinary claims apart"},
}

// benchCommand measures Docket against a real database and prints one JSON
// object per scenario on out; progress and diagnostics go to errOut. See
// package internal/tools/bench for what each scenario measures.
func benchCommand() *command {
	var names []string
	about := "Scenarios:\n"
	for _, s := range benchScenarios {
		names = append(names, s.name)
		about += fmt.Sprintf("  %-10s %s\n", s.name, s.about)
	}
	about += `
Prints one JSON object per measurement on stdout; progress goes to stderr.
Without --database-url or $DATABASE_URL it uses 127.0.0.1:5432, else a private
cluster it starts and removes.`
	return &command{
		name:    "bench",
		summary: "measure insert, drain and latency; one JSON line per scenario",
		args:    "--scenario " + strings.Join(names, "|"),
		about:   about,
		flags:   benchFlags,
	}
}

func benchFlags(fs *flag.FlagSet) action {
	url := fs.String("database-url", "", "PostgreSQL connection URL (default $DATABASE_URL, else a local server found or started)")
	scenario := fs.String("scenario", "", "what to measure: "+strings.Join(bench.Scenarios, ", ")+", "+bench.ScenarioAll+", "+bench.ScenarioLimit+", "+bench.ScenarioRelay+", "+bench.ScenarioHeldXmin+" or "+bench.ScenarioMultiDB+" (required)")
	jobs := fs.Int("jobs", bench.DefaultJobs, "jobs to insert (insert) or drain (drain); workflows to run (workflows: default 10,000, at most 2,000 under all)")
	batch := fs.Int("batch", bench.DefaultBatch, "jobs per transaction for insert and drain's fill")
	workers := fs.Int("workers", 0, "worker concurrency (0: the worker default; 32 for handlers)")
	handlerMin := fs.Duration("handler-min", bench.DefaultHandlerMin, "handlers (and flowcontrol with --limited-sleep): shortest handler sleep")
	handlerMax := fs.Duration("handler-max", bench.DefaultHandlerMax, "handlers (and flowcontrol with --limited-sleep): longest handler sleep")
	producers := fs.Int("producers", bench.DefaultProducers, "producer goroutines for sustained, one job per transaction each")
	inserters := fs.Int("inserters", 1, "insert: connections inserting batches at once")
	processes := fs.Int("processes", 1, "drain: worker processes, each with --workers slots")
	serveWorker := fs.String("serve-worker", "", "internal: run one worker process of a multi-process drain on this bench schema")
	producerTx := fs.Bool("producer-tx", false, "producers wrap each enqueue in BEGIN/COMMIT instead of running it on the pool")
	rate := fs.Int("rate", 0, "total target enqueue rate in jobs/s for sustained (default 1000) and heldxmin (default 2000)")
	duration := fs.Duration("duration", bench.DefaultDuration, "how long sustained produces")
	natsURL := fs.String("nats-url", "nats://127.0.0.1:4222", "NATS server with JetStream, for the relay scenario")
	relays := fs.String("relays", "1,3", "relay: the numbers of relay processes to measure, comma-separated, one line each")
	relayBin := fs.String("relay-bin", "", "relay: the docket binary whose relay run is measured (default: this one)")
	baseline := fs.Duration("baseline", bench.DefaultHeldBaseline, "heldxmin: how long to run before holding the transaction")
	held := fs.Duration("held", bench.DefaultHeldHold, "heldxmin: how long the transaction holds back the vacuum horizon")
	recovery := fs.Duration("recovery", bench.DefaultHeldRecovery, "heldxmin: how long to run after releasing it")
	window := fs.Duration("window", bench.DefaultHeldWindow, "heldxmin: how often to print a line")
	heldLimitedRate := fs.Int("held-limited-rate", 0, "heldxmin: also run a kind under a rate limit of this many jobs/s, offered at twice that (0: none)")
	limitedShare := fs.Float64("limited-share", bench.DefaultLimitedShare, "flowcontrol: fraction of the jobs that are the limited kind")
	limitRate := fs.Int("limit-rate", bench.DefaultLimitRate, "flowcontrol: the rate limit in jobs/s of the rate variant")
	limitRunning := fs.Int("limit-running", bench.DefaultLimitRunning, "flowcontrol: the per-tenant running limit of the concurrency variant")
	limitTenants := fs.Int("limit-tenants", bench.DefaultLimitTenants, "flowcontrol: tenants the limited jobs are spread over")
	limitVariants := fs.String("limit-variants", strings.Join(bench.LimitVariants, ","), "flowcontrol: the variants to run, comma-separated")
	limitedSleep := fs.Bool("limited-sleep", false, "flowcontrol: limited handlers sleep --handler-min to --handler-max (default: they return at once)")
	keys := fs.Int("keys", bench.DefaultSerialKeys, "serial: serial keys the jobs are spread over")
	idleJobs := fs.Int("idle-jobs", bench.DefaultIdleJobs, "idle: jobs to enqueue, one every 100ms")
	handlerTime := fs.Duration("handler-time", 0, "serial and multidb: how long each handler sleeps")
	databases := fs.String("databases", "1,2,3", "multidb: the numbers of databases to drain at once, comma-separated")
	history := fs.String("history", "on", "keep finished jobs in history: on or off")
	pollOnly := fs.Bool("poll-only", false, "disable LISTEN/NOTIFY: workers find jobs by polling only")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the timed part to this file (with --scenario all, one file per scenario)")
	return func(ctx context.Context, pos []string, out, errOut io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		jobsSet := false
		fs.Visit(func(f *flag.Flag) { jobsSet = jobsSet || f.Name == "jobs" })
		if !jobsSet && *scenario == bench.ScenarioWorkflows {
			*jobs = bench.DefaultWorkflows
		}
		if !jobsSet && *scenario == bench.ScenarioMultiDB {
			*jobs = bench.DefaultMultiDBJobs
		}
		var dbCounts []int
		for _, f := range strings.Split(*databases, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 1 {
				return fmt.Errorf("%w: --databases wants counts of at least 1, comma-separated, got %q", errUsage, *databases)
			}
			dbCounts = append(dbCounts, k)
		}
		for name, v := range map[string]int{"--jobs": *jobs, "--batch": *batch, "--producers": *producers,
			"--inserters": *inserters, "--processes": *processes, "--limit-rate": *limitRate,
			"--limit-running": *limitRunning, "--limit-tenants": *limitTenants, "--keys": *keys, "--idle-jobs": *idleJobs} {
			if v < 1 {
				return fmt.Errorf("%w: %s must be at least 1, got %d", errUsage, name, v)
			}
		}
		if *workers < 0 {
			return fmt.Errorf("%w: --workers must be 0 (the default) or more, got %d", errUsage, *workers)
		}
		if *rate < 0 {
			return fmt.Errorf("%w: --rate must be positive, got %d", errUsage, *rate)
		}
		if *heldLimitedRate < 0 {
			return fmt.Errorf("%w: --held-limited-rate must be 0 (none) or more, got %d", errUsage, *heldLimitedRate)
		}
		if !(*limitedShare > 0 && *limitedShare <= 1) {
			return fmt.Errorf("%w: --limited-share must be more than 0 and at most 1, got %v", errUsage, *limitedShare)
		}
		if *handlerTime < 0 {
			return fmt.Errorf("%w: --handler-time must be 0 (none) or more, got %s", errUsage, *handlerTime)
		}
		for name, d := range map[string]time.Duration{"--duration": *duration, "--baseline": *baseline, "--held": *held, "--recovery": *recovery, "--window": *window} {
			if d <= 0 {
				return fmt.Errorf("%w: %s must be positive, got %s", errUsage, name, d)
			}
		}
		if *history != "on" && *history != "off" {
			return fmt.Errorf("%w: --history must be on or off, got %q", errUsage, *history)
		}
		var counts []int
		for f := range strings.SplitSeq(*relays, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 64 {
				return fmt.Errorf("%w: --relays: want numbers from 1 to 64, comma-separated, got %q", errUsage, *relays)
			}
			counts = append(counts, n)
		}
		if *serveWorker != "" {
			*scenario = bench.ScenarioDrain
		}
		dbURL := *url // set below from $DATABASE_URL, or when discovery finds the database
		if dbURL == "" {
			dbURL = os.Getenv("DATABASE_URL")
		}
		relay := bench.RelayConfig{NatsURL: *natsURL, Events: *jobs, Relays: counts,
			Rate: *rate, Duration: *duration, Progress: errOut, CPUProfile: *cpuProfile}
		if *scenario == bench.ScenarioRelay {
			return benchRelay(ctx, dbURL, relay, *relayBin, out, errOut)
		}
		runner, err := bench.New(bench.Config{
			Inserters: *inserters, Processes: *processes, WorkerProcess: workerProcess(&dbURL, *workers, *history, *pollOnly),
			Scenario: *scenario, Jobs: *jobs, Batch: *batch, Workers: *workers,
			HandlerMin: *handlerMin, HandlerMax: *handlerMax,
			Producers: *producers, ProducerTx: *producerTx, Rate: *rate, Duration: *duration,
			Baseline: *baseline, Held: *held, Recovery: *recovery, Window: *window, HeldLimitedRate: *heldLimitedRate,
			LimitedShare: *limitedShare, LimitRate: *limitRate, LimitRunning: *limitRunning, LimitTenants: *limitTenants, LimitedSleep: *limitedSleep, LimitVariants: strings.Split(*limitVariants, ","),
			SerialKeys: *keys, IdleJobs: *idleJobs, SerialHandler: *handlerTime, Databases: dbCounts, MultiDBHandler: *handlerTime,
			DisableHistory: *history == "off", PollOnly: *pollOnly, CPUProfile: *cpuProfile,
			Progress: errOut, ProgressBar: isTerminal(errOut),
		})
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}

		if dbURL == "" {
			fmt.Fprintln(errOut, "docket bench: no --database-url or $DATABASE_URL; looking for PostgreSQL (127.0.0.1:5432, or a private cluster)...")
			srv, err := pgsrv.Discover(ctx)
			if err != nil {
				return err
			}
			defer srv.Stop()
			if srv.Private != nil {
				fmt.Fprintln(errOut, "docket bench: started a private PostgreSQL cluster; it is removed when the bench ends")
			}
			dbURL = srv.URL
		}
		pool, err := connect(ctx, dbURL, 4, false)
		if err != nil {
			return err
		}
		defer pool.Close()
		if *serveWorker != "" {
			return bench.ServeWorker(ctx, pool, bench.Config{Workers: *workers, DisableHistory: *history == "off",
				PollOnly: *pollOnly, Progress: errOut}, *serveWorker, os.Stdin, out)
		}
		err = runner.Run(ctx, pool, func(r bench.Result) error {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			_, err = out.Write(append(b, '\n'))
			return err
		})
		if err == nil && *scenario == bench.ScenarioAll {
			// Last, as it needs NATS besides PostgreSQL.
			if p := relay.CPUProfile; p != "" {
				relay.CPUProfile = strings.TrimSuffix(p, filepath.Ext(p)) + "." + bench.ScenarioRelay + filepath.Ext(p)
			}
			if err = benchRelay(ctx, dbURL, relay, *relayBin, out, errOut); err != nil {
				err = fmt.Errorf("relay (NATS at --nats-url %s): %w", relay.NatsURL, err)
			}
		}
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return fmt.Errorf("interrupted; bench schemas dropped: %w", err)
		}
		return err
	}
}

// workerProcess returns the command that runs one worker process of a
// multi-process drain: this program again, with --serve-worker.
func workerProcess(url *string, workers int, history string, pollOnly bool) func(schema string) *exec.Cmd {
	return func(schema string) *exec.Cmd {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		args := []string{"bench", "--serve-worker", schema, "--database-url", *url,
			"--workers", strconv.Itoa(workers), "--history", history}
		if pollOnly {
			args = append(args, "--poll-only")
		}
		return exec.Command(self, args...)
	}
}

// benchRelay runs the relay scenario and prints its JSON lines. Each relay
// runs in a process of its own, docket relay run of bin (empty: this
// program), but with a CPU profile, which covers relays in this process.
func benchRelay(ctx context.Context, dbURL string, cfg bench.RelayConfig, bin string, out, errOut io.Writer) error {
	if dbURL == "" {
		srv, err := pgsrv.Discover(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		dbURL = srv.URL
	}
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		bin = self
	}
	if cfg.CPUProfile == "" {
		cfg.Process = func(schema string) *exec.Cmd {
			return exec.Command(bin, "relay", "run", "--database-url", dbURL, "--schema", schema, "--nats-url", cfg.NatsURL)
		}
	}
	pool, err := connect(ctx, dbURL, steadyConns, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	enc := json.NewEncoder(out)
	return bench.RunRelay(ctx, pool, cfg, func(r bench.RelayResult) error { return enc.Encode(r) })
}

// steadyConns is the relay bench's pool: the steady phase's 8 producers,
// the consumer's bookkeeping and the checks for a drained outbox.
const steadyConns = 10
