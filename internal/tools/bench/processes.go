package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A drain over several worker processes talks to each child over its
// standard streams: the child writes "ready" once connected, starts its
// worker when it reads "go", writes "ran N" as its handler count grows, and
// stops when its standard input closes.
const (
	lineReady     = "ready"
	lineGo        = "go"
	linePrefixRan = "ran "
	// ranEvery is how often a child reports its handler count.
	ranEvery = 5 * time.Millisecond
)

// ServeWorker is the child side of a drain with Config.Processes > 1: a
// worker with cfg's concurrency, history and notify settings on the
// existing bench schema, driven by the lines read from in and written to
// out as described above.
func ServeWorker(ctx context.Context, db *pgxpool.Pool, cfg Config, schema string, in io.Reader, out io.Writer) error {
	r, err := New(Config{Scenario: ScenarioDrain, Workers: cfg.Workers, DisableHistory: cfg.DisableHistory,
		PollOnly: cfg.PollOnly, Progress: cfg.Progress, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	jobs, err := docket.NewClient(db, docket.Config{Schema: schema, DisableHistory: r.cfg.DisableHistory, NotifyDebounce: -1})
	if err != nil {
		return err
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		return err
	}
	e := &env{r: r, db: db, schema: schema, jobs: jobs, ops: ops, debounce: -1}
	lines := bufio.NewScanner(in)
	if _, err := fmt.Fprintln(out, lineReady); err != nil {
		return err
	}
	if !lines.Scan() || lines.Text() != lineGo {
		return fmt.Errorf("bench worker: want %q on standard input", lineGo)
	}
	var ran atomic.Int64
	stop, err := e.worker(ctx, func(context.Context, *handlers.Job[noop]) error {
		ran.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	closed := make(chan struct{})
	go func() {
		for lines.Scan() {
		}
		close(closed)
	}()
	t := time.NewTicker(ranEvery)
	defer t.Stop()
	last := int64(-1)
	report := func() error {
		if n := ran.Load(); n != last {
			last = n
			_, err := fmt.Fprintf(out, "%s%d\n", linePrefixRan, n)
			return err
		}
		return nil
	}
	for {
		select {
		case <-closed:
			stop()
			return report()
		case <-ctx.Done():
			stop()
			return ctx.Err()
		case <-t.C:
			if err := report(); err != nil {
				stop()
				return err
			}
		}
	}
}

// children is a drain's set of worker processes.
type children struct {
	cmds  []*exec.Cmd
	stdin []io.WriteCloser
	ran   []atomic.Int64
	ready chan error
	wg    sync.WaitGroup
}

// pids returns the worker processes' ids.
func (c *children) pids() []int {
	pids := make([]int, len(c.cmds))
	for i, cmd := range c.cmds {
		pids[i] = cmd.Process.Pid
	}
	return pids
}

// spawn starts n worker processes on the scenario's schema and waits until
// each is connected and ready.
func (e *env) spawn(n int) (*children, error) {
	c := &children{ran: make([]atomic.Int64, n), ready: make(chan error, n)}
	for i := range n {
		cmd := e.r.cfg.WorkerProcess(e.schema)
		if cmd.Stderr == nil {
			cmd.Stderr = e.r.cfg.Progress // shared by the children: a locked writer
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			return c, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return c, err
		}
		if err := cmd.Start(); err != nil {
			return c, fmt.Errorf("start worker process: %w", err)
		}
		c.cmds, c.stdin = append(c.cmds, cmd), append(c.stdin, in)
		c.wg.Go(func() { c.read(i, out) })
	}
	timeout := time.After(time.Minute)
	for range n {
		select {
		case err := <-c.ready:
			if err != nil {
				return c, err
			}
		case <-timeout:
			return c, errors.New("worker processes not ready within a minute")
		}
	}
	return c, nil
}

// read follows one child's output.
func (c *children) read(i int, out io.Reader) {
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != lineReady {
		c.ready <- fmt.Errorf("worker process %d did not report ready", i)
		return
	}
	c.ready <- nil
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), linePrefixRan); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				c.ran[i].Store(n)
			}
		}
	}
}

// start tells every child to start its worker.
func (c *children) start() error {
	for _, in := range c.stdin {
		if _, err := fmt.Fprintln(in, lineGo); err != nil {
			return fmt.Errorf("start worker process: %w", err)
		}
	}
	return nil
}

// total is the sum of the children's handler counts.
func (c *children) total() int64 {
	var n int64
	for i := range c.ran {
		n += c.ran[i].Load()
	}
	return n
}

// stop closes the children's standard input, which stops them, and waits
// for them to exit.
func (c *children) stop() error {
	for _, in := range c.stdin {
		_ = in.Close()
	}
	var errs []error
	for i, cmd := range c.cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("worker process %d: %w", i, err))
		}
	}
	c.wg.Wait()
	return errors.Join(errs...)
}
