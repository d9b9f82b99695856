package faultsuite

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// readyTimeout bounds how long a worker process may take to start.
const readyTimeout = 60 * time.Second

// Process is a worker process started by Start. Its methods are safe for
// concurrent use.
type Process struct {
	Spec   WorkerSpec
	cmd    *exec.Cmd
	stderr *logBuffer
	exited chan struct{}
	err    error // of Wait, valid once exited is closed

	mu     sync.Mutex
	leaked int // reported at a clean shutdown; -1 until then
}

// Start runs cmd, a program that calls RunWorker when IsWorker, as a worker
// process of spec, and waits until its worker has started. The process's
// stderr (its JSON logs) is kept for Logged and Stderr.
func Start(cmd *exec.Cmd, spec WorkerSpec) (*Process, error) {
	if spec.ID == uuid.Nil {
		spec.ID = uuid.New()
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	p := &Process{Spec: spec, cmd: cmd, stderr: &logBuffer{}, exited: make(chan struct{}), leaked: -1}
	cmd.Env = append(os.Environ(), envWorker+"="+string(js), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ready ") && !said {
				said = true
				ready <- true
			}
			if n, ok := strings.CutPrefix(line, "leaked "); ok {
				if v, err := strconv.Atoi(n); err == nil {
					p.mu.Lock()
					p.leaked = v
					p.mu.Unlock()
				}
			}
		}
		if !said {
			ready <- false
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case ok := <-ready:
		if !ok {
			<-p.exited
			return nil, fmt.Errorf("faultsuite: worker process exited before it was ready: %v\n%s", p.err, p.stderr.tail())
		}
	case <-time.After(readyTimeout):
		p.Kill()
		return nil, fmt.Errorf("faultsuite: worker process not ready after %s\n%s", readyTimeout, p.stderr.tail())
	}
	return p, nil
}

// ID returns the process's worker id.
func (p *Process) ID() string { return p.Spec.ID.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process with SIGKILL, if it still runs, and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // in case it is stopped
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop asks the process to shut down (SIGTERM) and waits up to timeout for
// it. It returns an error if the process did not exit in time (it is then
// killed), exited with a failure, or left goroutines of Docket or pgx
// running after its client stopped and its pool closed.
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("faultsuite: worker process %s still running %s after SIGTERM", p.ID(), timeout)
	}
	if p.err != nil {
		return fmt.Errorf("faultsuite: worker process %s: %w\n%s", p.ID(), p.err, p.stderr.tail())
	}
	if n := p.Leaked(); n != 0 {
		return fmt.Errorf("faultsuite: worker process %s left %d goroutines running (-1: did not report)\n%s", p.ID(), n, p.stderr.tail())
	}
	return nil
}

// Leaked returns how many goroutines of Docket or pgx the process reported
// left after its clean shutdown, or -1 before it reported.
func (p *Process) Leaked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaked
}

// RSS returns the process's resident set size in bytes.
func (p *Process) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("faultsuite: no VmRSS in /proc status")
}

// Logged reports whether the process's logs contain s.
func (p *Process) Logged(s string) bool { return bytes.Contains(p.stderr.bytes(), []byte(s)) }

// Stderr returns what the process wrote to stderr (the last 4 MiB at most).
func (p *Process) Stderr() string { return string(p.stderr.bytes()) }

// logBuffer keeps the last 4 MiB written to it.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const logKeep = 4 << 20

func (b *logBuffer) Write(s []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, s...)
	if len(b.buf) > logKeep {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-logKeep/2:]...)
	}
	return len(s), nil
}

func (b *logBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}

// tail returns the last 4 KiB, for errors.
func (b *logBuffer) tail() string {
	s := b.bytes()
	return string(s[max(0, len(s)-4096):])
}
