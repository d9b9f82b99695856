package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The fence, shutdown and signal tests run workers as real OS processes: the
// test binary re-executes itself with these variables set, and TestMain
// runs workerProcess instead of the tests.
const (
	envProcess  = "DOCKET_WORKER_TEST_PROCESS"
	envURL      = "DOCKET_WORKER_TEST_URL"
	envSchema   = "DOCKET_WORKER_TEST_SCHEMA"
	envID       = "DOCKET_WORKER_TEST_ID"
	envLease    = "DOCKET_WORKER_TEST_LEASE_MS"
	envConc     = "DOCKET_WORKER_TEST_CONCURRENCY"
	envGrace    = "DOCKET_WORKER_TEST_SHUTDOWN_MS"
	envSleep    = "DOCKET_WORKER_TEST_SLEEP_MS"
	envFlush    = "DOCKET_WORKER_TEST_FLUSH_MS"
	envMaxConns = "DOCKET_WORKER_TEST_MAX_CONNS"
	// envEffects, when set, is the connection string the handlers record
	// their runs through, so that they can while the worker's own
	// connections are cut (fence tests).
	envEffects = "DOCKET_WORKER_TEST_EFFECTS_URL"
)

// Args of the process tests' kinds. Each records its run in the effects
// table: (job id, attempt, kind, worker id).
type blockArgs struct{ Block bool }

func (blockArgs) Kind() string { return "proc_block" }

// blockStarted is the effect kind a proc_block handler records as it starts.
const blockStarted = "proc_block_started"

const sqlEffect = `INSERT INTO %s.effects (job_id, attempt, kind, worker) VALUES ($1, $2, $3, $4)`

// createEffects creates the table the process tests' handlers write to.
func createEffects(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	_, err := pool.Exec(t.Context(), fmt.Sprintf(`CREATE TABLE %s.effects
		(job_id bigint NOT NULL, attempt int NOT NULL, kind text NOT NULL, worker text NOT NULL)`, schema))
	if err != nil {
		t.Fatal(err)
	}
}

// registerProcessKinds registers the handlers of the process tests, which
// write their effects through pool; me is the worker id recorded with each.
func registerProcessKinds(reg *handlers.Registry, pool *pgxpool.Pool, schema string, me *string, sleep time.Duration) {
	effect := fmt.Sprintf(sqlEffect, schema)
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[blockArgs]) error {
		// Mark the start, so that a test can wait for its handlers to run
		// rather than for their jobs to be claimed.
		if _, err := pool.Exec(ctx, effect, j.ID, j.Attempt, blockStarted, *me); err != nil {
			return err
		}
		if j.Args.Block {
			<-ctx.Done()
			return context.Cause(ctx)
		}
		time.Sleep(sleep)
		_, err := pool.Exec(context.WithoutCancel(ctx), effect, j.ID, j.Attempt, j.Kind, *me)
		return err
	}, handlers.KindOpts{})
}

// signalArgs is a workflow step that records the signal it read: effect
// kind "signal:<payload>" or "timed_out".
type signalArgs struct{}

func (signalArgs) Kind() string { return "proc_signal" }

// registerSignalKind registers proc_signal's handler.
func registerSignalKind(reg *handlers.Registry, pool *pgxpool.Pool, schema string, me *string) {
	effect := fmt.Sprintf(sqlEffect, schema)
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[signalArgs]) error {
		kind := "signal:" + string(j.SignalPayload)
		var out any
		if err := j.Signal(&out); errors.Is(err, core.ErrSignalTimedOut) {
			kind = "timed_out"
		} else if err != nil {
			return err
		}
		_, err := pool.Exec(ctx, effect, j.ID, j.Attempt, kind, *me)
		return err
	}, handlers.KindOpts{})
}

// workerProcess is the main function of a re-executed worker process. It
// runs until SIGTERM or SIGINT, then stops gracefully.
func workerProcess() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 2
	}
	envInt := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return v
		}
		return def
	}
	ctx := context.Background()
	schema := os.Getenv(envSchema)
	pcfg, err := pgxpool.ParseConfig(os.Getenv(envURL))
	if err != nil {
		return fail(err)
	}
	// Four processes at once must leave room on a shared server; six (the
	// rate-limit test) take 4 each.
	pcfg.MaxConns = int32(envInt(envMaxConns, 8))
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	id := uuid.New()
	if s := os.Getenv(envID); s != "" {
		id = uuid.MustParse(s)
	}
	me := id.String()
	reg := handlers.NewRegistry()
	registerProcessKinds(reg, pool, schema, &me, time.Duration(envInt(envSleep, 0))*time.Millisecond)
	registerSignalKind(reg, pool, schema, &me)
	effects := pool
	if u := os.Getenv(envEffects); u != "" {
		ecfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			return fail(err)
		}
		ecfg.MaxConns = 4
		if effects, err = pgxpool.NewWithConfig(ctx, ecfg); err != nil {
			return fail(err)
		}
		defer effects.Close()
	}
	registerFenceKinds(reg, effects, schema, me)
	registerFlowKinds(reg, effects, schema)
	registerCancelKinds(reg, effects, schema)
	lease := time.Duration(envInt(envLease, 2000)) * time.Millisecond
	w, err := New(Config{
		DB: pool, Schema: schema, Handlers: reg, ID: id,
		Pools:           []PoolConfig{{Queues: []string{"default"}, Concurrency: envInt(envConc, 10)}},
		PollInterval:    100 * time.Millisecond,
		Lease:           lease,
		ShutdownTimeout: time.Duration(envInt(envGrace, 5000)) * time.Millisecond,
		FlushInterval:   time.Duration(envInt(envFlush, 0)) * time.Millisecond,
		Logger:          slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		return fail(err)
	}
	sig, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Start may race the database coming up (after a restart): retry.
	for attempt := 0; ; attempt++ {
		if err = w.Start(ctx); err == nil {
			break
		}
		if attempt == 100 {
			return fail(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("ready", me)
	<-sig.Done()
	if err := w.Stop(context.Background()); err != nil {
		return fail(err)
	}
	fmt.Println("stopped")
	return 0
}

// proc is a worker process started by a test.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	id     string
	stderr *logBuffer
	exited chan struct{}
	err    error // of Wait, valid once exited is closed
}

// startProcess runs the test binary as a worker process and waits until it
// has started its worker.
func startProcess(t *testing.T, url, schema string, env ...string) *proc {
	t.Helper()
	p := &proc{t: t, id: uuid.NewString(), stderr: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = append(os.Environ(), envProcess+"=1", envURL+"="+url, envSchema+"="+schema, envID+"="+p.id)
	// The race detector sleeps 1s at exit by default; the signal tests time the exit.
	p.cmd.Env = append(p.cmd.Env, "GORACE=atexit_sleep_ms=0")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				once.Do(func() { ready <- true })
			}
		}
		once.Do(func() { ready <- false })
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			p.dumpGoroutines()
		}
		p.kill()
		if t.Failed() {
			t.Logf("worker process %s stderr:\n%s", p.id, p.stderr.String())
		}
	})
	select {
	case ok := <-ready:
		if !ok {
			<-p.exited
			t.Fatalf("worker process exited before it was ready: %v\n%s", p.err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker process not ready after 30s\n%s", p.stderr.String())
	}
	return p
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// dumpGoroutines makes a running process print its goroutines to stderr
// (the Go runtime does on SIGQUIT, then exits), to see where a failed test
// left it.
func (p *proc) dumpGoroutines() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// kill ends the process with SIGKILL (if still running) and waits for it.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // in case it is stopped
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// wait waits for the process to exit and returns how long that took.
func (p *proc) wait(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	select {
	case <-p.exited:
		return time.Since(start), p.err
	case <-time.After(timeout):
		p.t.Fatalf("worker process %s still running after %s", p.id, timeout)
		return 0, nil
	}
}
