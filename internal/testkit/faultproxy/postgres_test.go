package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// pgProxy starts a proxy to the package's database and returns it with a
// connection config that goes through it.
func pgProxy(t *testing.T) (*faultproxy.Proxy, *pgx.ConnConfig) {
	t.Helper()
	p, url, err := faultproxy.ForPostgres(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg
}

func connect(t *testing.T, cfg *pgx.ConnConfig) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// query runs SELECT 1 with a timeout and returns the error and how long it
// took.
func query(conn *pgx.Conn, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	var one int
	err := conn.QueryRow(ctx, "SELECT 1").Scan(&one)
	return time.Since(start), err
}

func TestForPostgres(t *testing.T) {
	t.Parallel()
	for _, cs := range []string{
		"postgres://u@127.0.0.1:5432/db?sslmode=disable",
		"postgres://u@127.0.0.1:5432/db",
		"host=127.0.0.1 port=5432 user=u dbname=db sslmode=disable",
	} {
		p, out, err := faultproxy.ForPostgres(cs)
		if err != nil {
			t.Errorf("%q: %v", cs, err)
			continue
		}
		cfg, err := pgx.ParseConfig(out)
		if err != nil {
			t.Errorf("%q: rewritten %q: %v", cs, out, err)
		} else if addr := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))); addr != p.Addr() || cfg.User != "u" || cfg.Database != "db" {
			t.Errorf("%q: rewritten %q goes to %s as %s/%s, want %s as u/db", cs, out, addr, cfg.User, cfg.Database, p.Addr())
		}
		p.Close()
	}
	if _, _, err := faultproxy.ForPostgres("host=/tmp dbname=db"); err == nil {
		t.Error("ForPostgres accepted a unix socket")
	}
}

func TestPostgresBlackhole(t *testing.T) {
	t.Parallel()
	p, cfg := pgProxy(t)
	conn := connect(t, cfg)
	if _, err := query(conn, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	p.Blackhole()
	// The established connection answers nothing: the query fails at its
	// own deadline, not before.
	took, err := query(conn, 500*time.Millisecond)
	if err == nil || took < 400*time.Millisecond || took > 3*time.Second {
		t.Fatalf("query during the blackhole: %v after %s; want a failure at the 500ms deadline", err, took)
	}
	// A new connection is accepted but never answered.
	cfg.ConnectTimeout = 500 * time.Millisecond
	start := time.Now()
	if c, err := pgx.ConnectConfig(context.Background(), cfg); err == nil {
		_ = c.Close(context.Background())
		t.Fatal("connected during the blackhole")
	} else if took := time.Since(start); took < 400*time.Millisecond || took > 3*time.Second {
		t.Fatalf("connect during the blackhole failed after %s, want at the 500ms connect timeout: %v", took, err)
	}

	p.Restore()
	if _, err := query(connect(t, cfg), 5*time.Second); err != nil {
		t.Fatalf("query after Restore: %v", err)
	}
}

func TestPostgresCutAndRefuse(t *testing.T) {
	t.Parallel()
	p, cfg := pgProxy(t)
	conn := connect(t, cfg)
	if _, err := query(conn, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// A cut connection fails at once, long before the query's deadline.
	p.Cut()
	took, err := query(conn, 10*time.Second)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("query after Cut: %v after %s; want a prompt connection error", err, took)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) && !conn.IsClosed() {
		t.Errorf("query after Cut: %v; want a reset connection", err)
	}
	// New connections still work after Cut.
	if _, err := query(connect(t, cfg), 5*time.Second); err != nil {
		t.Fatalf("query on a new connection after Cut: %v", err)
	}

	// Refused connections fail at once too.
	p.Refuse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		_ = c.Close(ctx)
		t.Fatal("connected while refused")
	} else if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("connect while refused failed after %s, want at once: %v", took, err)
	}

	p.Restore()
	if _, err := query(connect(t, cfg), 5*time.Second); err != nil {
		t.Fatalf("query after Restore: %v", err)
	}
}
