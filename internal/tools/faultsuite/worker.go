package faultsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/schedule"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// envWorker holds a worker process's WorkerSpec as JSON. A program that
// serves as the harness's worker (the fault suite's test binary, `docket
// soak`) calls RunWorker when it is set.
const envWorker = "DOCKET_FAULTSUITE_WORKER"

// appPrefix starts the application_name of every connection of a worker
// process, so that the checker finds what a process left behind.
const appPrefix = "docket-faultsuite "

// WorkerSpec configures one worker process.
type WorkerSpec struct {
	URL         string    `json:"url"`    // PostgreSQL, possibly through a fault proxy
	Schema      string    `json:"schema"` // Docket's tables and the harness's
	ID          uuid.UUID `json:"id"`     // the worker id; zero means a new one
	LeaseMS     int       `json:"lease_ms"`
	Concurrency int       `json:"concurrency"`
	MaxConns    int32     `json:"max_conns"` // the pool's size; 0 means 6
	// Schedules, when positive, makes the process keep that many schedules
	// named tick-0000... that fire every minute.
	Schedules int `json:"schedules"`
	// ScheduleEveryMS is their period; see Schedules.
	ScheduleEveryMS int `json:"schedule_every_ms"`
}

// IsWorker reports whether this process was started as a worker process.
func IsWorker() bool { return os.Getenv(envWorker) != "" }

// schedules returns the n schedules a worker process with
// WorkerSpec.Schedules = n keeps, named tick-0000 and on. They fire every
// minute, or every `every` when it is a whole number of seconds that
// divides a minute, and are spread over five sixths of that period by name,
// so that n schedules do not all run in the same second. Every missed fire
// time runs (CatchUp), so that the soak can check one run per fire: under
// RunOnce, a run that a fault delays past its successor's time covers that
// fire too (a worker lost with the run costs a lease, 5 s, and a period of
// the short soak is 10 s). They run at the highest priority, so that a
// backlog does not make them late.
func schedules(n int, every time.Duration) []schedule.Schedule {
	spec := "* * * * *"
	if every > 0 && every < time.Minute {
		spec = fmt.Sprintf("*/%d * * * * *", int(every.Seconds()))
	} else {
		every = time.Minute
	}
	out := make([]schedule.Schedule, n)
	for i := range out {
		out[i] = schedule.Schedule{Name: fmt.Sprintf("tick-%04d", i), Spec: spec,
			Args: Tick{}, Window: every * 5 / 6, Misfire: schedule.CatchUp, Priority: docket.MaxPriority}
	}
	return out
}

// RunWorker is the main function of a worker process: it runs a Docket
// client with the harness's handlers on the WorkerSpec in the environment
// until SIGTERM or SIGINT, stops it gracefully, closes its pool, and
// checks that no goroutine of Docket or pgx is left. It prints "ready
// <id>" once started and "leaked <n>" at the end (the leaked stacks go to
// stderr), and returns the exit code: 0, or 2 if anything failed.
func RunWorker() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "faultsuite worker:", err)
		return 2
	}
	var spec WorkerSpec
	if err := json.Unmarshal([]byte(os.Getenv(envWorker)), &spec); err != nil {
		return fail(fmt.Errorf("%s: %w", envWorker, err))
	}
	if spec.ID == uuid.Nil {
		spec.ID = uuid.New()
	}
	ctx := context.Background()
	cfg, err := docket.ParsePoolConfig(spec.URL)
	if err != nil {
		return fail(err)
	}
	cfg.MaxConns = spec.MaxConns
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 6
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = appPrefix + spec.ID.String()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	reg := handlers.NewRegistry()
	register(reg, pool, spec.Schema, spec.ID.String())
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	client, err := docket.NewClient(pool, docket.Config{
		Schema:   spec.Schema,
		Registry: reg,
		Worker: docket.WorkerConfig{
			ID:              spec.ID,
			Pools:           []docket.PoolConfig{{Queues: []string{"default"}, Concurrency: max(spec.Concurrency, 1)}},
			PollInterval:    100 * time.Millisecond,
			Lease:           time.Duration(spec.LeaseMS) * time.Millisecond,
			ShutdownTimeout: 5 * time.Second,
			Logger:          logger,
		},
		Schedules: schedules(spec.Schedules, time.Duration(spec.ScheduleEveryMS)*time.Millisecond),
		Scheduler: schedule.Config{ReconcileInterval: 10 * time.Second},
	})
	if err != nil {
		pool.Close()
		return fail(err)
	}
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Start may race the database coming up (after a restart) or a fault.
	for attempt := 0; ; attempt++ {
		if err = client.Start(ctx); err == nil {
			break
		}
		if attempt == 300 {
			pool.Close()
			return fail(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("ready", spec.ID)
	<-sig.Done()
	stopErr := client.Stop(context.Background())
	pool.Close()
	leaks := waitForLeaks(5 * time.Second)
	fmt.Println("leaked", len(leaks))
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "goroutines left after Stop and pool.Close:\n\n%s\n", strings.Join(leaks, "\n\n"))
	}
	if stopErr != nil {
		return fail(stopErr)
	}
	return 0
}

// waitForLeaks waits up to timeout for the goroutines that run Docket's or
// pgx's code to end and returns the stacks of those left.
func waitForLeaks(timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		leaks := libraryGoroutines()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// libraryGoroutines returns the stacks of every goroutine but the caller's
// with a frame of Docket's or pgx's code, but RunWorker's own.
func libraryGoroutines() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 || strings.Contains(g, "faultsuite.RunWorker") {
			continue
		}
		if strings.Contains(g, "github.com/docketq/docket") || strings.Contains(g, "github.com/jackc/") {
			out = append(out, g)
		}
	}
	return out
}
