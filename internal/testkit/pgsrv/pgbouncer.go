package pgsrv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bouncer is a private PgBouncer process in transaction pooling mode in
// front of one PostgreSQL database, for tests of Docket behind a
// transaction pooler. Start it with [StartBouncer]; stop it with
// [Bouncer.Stop].
type Bouncer struct {
	dir  string
	port int
	db   string
	user string // the upstream user, also the console's admin
	cmd  *exec.Cmd
	done chan error
}

// ErrNoBouncer is returned by [StartBouncer] when no pgbouncer binary is
// installed.
var ErrNoBouncer = errors.New("pgsrv: pgbouncer not found (install it: apt-get install -y pgbouncer; .ci/run does)")

// bouncerBinary finds the pgbouncer binary: on PATH, or where Debian's
// package puts it (/usr/sbin is not on every user's PATH).
func bouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrNoBouncer
}

// BouncerOptions tunes a [Bouncer]. The zero value is the setup
// docs/compatibility.md documents.
type BouncerOptions struct {
	// PoolSize is how many server connections the bouncer opens to the
	// database (default_pool_size). Zero means 20. One makes every client
	// share one server connection, and so meet each other's prepared
	// statements.
	PoolSize int
}

// StartBouncer starts pgbouncer on a free 127.0.0.1 port with
// pool_mode=transaction, forwarding to the database of upstream (a
// connection string of a server that trusts its user), and waits until it
// accepts connections. Clients connect with [Bouncer.URL]; any user name
// is accepted and the upstream user is used. Without a pgbouncer binary it
// returns ErrNoBouncer.
func StartBouncer(ctx context.Context, upstream string, opts BouncerOptions) (_ *Bouncer, err error) {
	bin, err := bouncerBinary()
	if err != nil {
		return nil, err
	}
	up, err := pgx.ParseConfig(upstream)
	if err != nil {
		return nil, fmt.Errorf("pgsrv: upstream: %w", err)
	}
	dir, err := os.MkdirTemp("", "docket-pgbouncer-")
	if err != nil {
		return nil, fmt.Errorf("pgsrv: %w", err)
	}
	b := &Bouncer{dir: dir, db: up.Database, user: up.User}
	defer func() {
		if err != nil {
			_ = b.Stop()
		}
	}()
	attr, err := asServerUser(dir) // pgbouncer, too, refuses to run as root
	if err != nil {
		return nil, err
	}
	if b.port, err = FreePort(); err != nil {
		return nil, fmt.Errorf("pgsrv: find a free port: %w", err)
	}
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%d dbname=%s user=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
admin_users = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
ignore_startup_parameters = extra_float_digits,search_path
logfile = %s
pidfile = %s
`, up.Database, up.Host, up.Port, up.Database, up.User, b.port, up.User, cmp.Or(opts.PoolSize, 20),
		filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	iniPath := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(iniPath, []byte(ini), 0o644); err != nil {
		return nil, fmt.Errorf("pgsrv: %w", err)
	}
	b.cmd = exec.Command(bin, iniPath)
	b.cmd.SysProcAttr = attr
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgsrv: start pgbouncer: %w", err)
	}
	b.done = make(chan error, 1)
	go func() { b.done <- b.cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case err := <-b.done:
			b.done <- err
			return nil, fmt.Errorf("pgsrv: pgbouncer exited (%v): %s", err, b.logTail())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pgsrv: pgbouncer did not accept connections: %s", b.logTail())
		}
	}
}

// URL returns the connection string of the database through the bouncer,
// with the query parameters in query (e.g. "default_query_exec_mode=exec")
// appended when not empty.
func (b *Bouncer) URL(query string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", b.port, b.db)
	if query != "" {
		u += "&" + query
	}
	return u
}

// Reconnect makes the bouncer replace its server connections (the admin
// console's RECONNECT): each is closed once its client releases it, and
// the next transaction gets a new one, on which no statement is prepared.
func (b *Bouncer) Reconnect(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@127.0.0.1:%d/pgbouncer?sslmode=disable", b.user, b.port))
	if err != nil {
		return fmt.Errorf("pgsrv: %w", err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // all the console speaks
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pgsrv: pgbouncer console: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "RECONNECT"); err != nil {
		return fmt.Errorf("pgsrv: pgbouncer RECONNECT: %w", err)
	}
	return nil
}

// Stop ends the pgbouncer process and removes its directory.
func (b *Bouncer) Stop() error {
	var err error
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Signal(os.Interrupt)
		select {
		case <-b.done:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	}
	if rmErr := os.RemoveAll(b.dir); rmErr != nil {
		err = rmErr
	}
	return err
}

func (b *Bouncer) logTail() string {
	data, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
