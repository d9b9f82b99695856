package pgsrv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a started or restarted cluster may take to
// accept connections.
const readyTimeout = 60 * time.Second

// Cluster is a private PostgreSQL cluster started by [StartCluster] in its own
// temporary directory. The zero value is not usable. Its methods are safe for
// concurrent use.
type Cluster struct {
	bin  string               // directory holding initdb, pg_ctl and postgres
	dir  string               // temporary directory: data/, postgres.log, the socket
	port int                  // TCP port on 127.0.0.1, kept across restarts
	attr *syscall.SysProcAttr // runs the server as an unprivileged user when we are root

	mu      sync.Mutex // serialises Restart and Stop
	stopped bool
}

// StartCluster initialises and starts a new private cluster and waits until it
// accepts connections. It always starts a new one, whatever DATABASE_URL or
// DOCKET_PG say; tests that restart or kill the database use it so that they
// never disturb a shared server. The caller must call [Cluster.Stop].
func StartCluster(ctx context.Context) (_ *Cluster, err error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, fmt.Errorf("pgsrv: %w", err)
	}
	dir, err := os.MkdirTemp("", "docket-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgsrv: %w", err)
	}
	c := &Cluster{bin: bin, dir: dir}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if c.attr, err = asServerUser(dir); err != nil {
		return nil, err
	}
	if err := c.initData(ctx); err != nil {
		return nil, err
	}
	// Picking a free port and binding it later races with other processes;
	// retry the rare loser with another port.
	for attempt := 1; ; attempt++ {
		if c.port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("pgsrv: find a free port: %w", err)
		}
		if err := c.configure(); err != nil {
			return nil, err
		}
		err = c.pgctl(ctx, "start")
		if err == nil {
			return c, nil
		}
		if attempt == 3 || !strings.Contains(c.logTail(), "could not bind") {
			return nil, err
		}
	}
}

// URL returns the cluster's admin connection string: user postgres (a
// superuser, no password), database postgres, over TCP on 127.0.0.1.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Restart stops the cluster with pg_ctl's fast mode (sessions are
// disconnected, committed data kept) and starts it again on the same port,
// returning once it accepts connections.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgsrv: restart of a stopped cluster")
	}
	return c.pgctl(ctx, "restart", "-m", "fast")
}

// Kill stops the server at once (pg_ctl stop -m immediate: no checkpoint,
// sessions killed, as in a crash) and keeps its data directory, so that
// [Cluster.Start] brings it back with every committed transaction, on the
// same port.
func (c *Cluster) Kill(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgsrv: kill of a stopped cluster")
	}
	return c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "immediate", "-w")
}

// Start starts a server that [Cluster.Kill] stopped and returns once it
// accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgsrv: start of a stopped cluster")
	}
	return c.pgctl(ctx, "start")
}

// Stop stops the cluster at once (pg_ctl stop -m immediate: no checkpoint,
// sessions killed) and removes its temporary directory. Calling it again
// does nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	var stopErr error
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		stopErr = c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "immediate", "-w")
	}
	return errors.Join(stopErr, os.RemoveAll(c.dir))
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "postgres.log") }

// configure writes the server settings. postgresql.auto.conf is read last
// and survives restarts, so the port stays the same; initdb created it, so
// it already belongs to the server's user.
func (c *Cluster) configure() error {
	conf := fmt.Sprintf(`# Written by docket's internal/pgsrv for a throw-away test cluster.
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = 200
fsync = off
full_page_writes = off
`, c.port, strings.ReplaceAll(c.dir, "'", "''"))
	if err := os.WriteFile(filepath.Join(c.dataDir(), "postgresql.auto.conf"), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("pgsrv: configure cluster: %w", err)
	}
	return nil
}

// pgctl runs a pg_ctl action that (re)starts the server, then waits until
// the server accepts connections on its port.
func (c *Cluster) pgctl(ctx context.Context, action string, args ...string) error {
	args = append([]string{action, "-D", c.dataDir(), "-l", c.logFile(), "-w",
		"-t", fmt.Sprint(int(readyTimeout.Seconds()))}, args...)
	if err := c.run(ctx, "pg_ctl", args...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := probe(ctx, c.URL())
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgsrv: cluster on port %d does not accept connections after pg_ctl %s: %w%s", c.port, action, err, c.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// run runs one of the PostgreSQL binaries as the server's user and reports
// its output and the server log's tail on failure.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = c.attr
	// pg_ctl's server redirects its output to the log, but never let a
	// stray inherited pipe hang us.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgsrv: %s %s: %w\n%s%s", name, strings.Join(args, " "), err,
			strings.TrimSpace(string(out)), c.logTail())
	}
	return nil
}

// logTail returns the last lines of the server log, for error messages.
func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.logFile())
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-20):]
	return "\n--- " + c.logFile() + " (tail) ---\n" + strings.Join(lines, "\n")
}

// serverEnv is the environment without PG* variables, which would otherwise
// redirect pg_ctl or initdb (PGDATA, PGPORT, PGHOST...).
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago, for a private server (PostgreSQL, PgBouncer, NATS,
// RabbitMQ) to listen on.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
