package docket_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestParsePoolConfigDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		connString    string
		connect, ping time.Duration
	}{
		{"postgres://u@127.0.0.1/db", docket.DefaultConnectTimeout, docket.DefaultPingTimeout},
		{"host=127.0.0.1 user=u dbname=db", docket.DefaultConnectTimeout, docket.DefaultPingTimeout},
		// The connection string's own settings are kept, 0 included.
		{"postgres://u@127.0.0.1/db?connect_timeout=2&pool_ping_timeout=1s", 2 * time.Second, time.Second},
		{"postgres://u@127.0.0.1/db?sslmode=disable&connect_timeout=0&pool_ping_timeout=0s", 0, 0},
		{"host=127.0.0.1 connect_timeout=0 pool_ping_timeout=0s", 0, 0},
		{"host=127.0.0.1 connect_timeout = 3", 3 * time.Second, docket.DefaultPingTimeout},
		// A keyword inside another setting's value is not a setting.
		{`host=127.0.0.1 password='x connect_timeout=0' application_name=a\ pool_ping_timeout=0s`, docket.DefaultConnectTimeout, docket.DefaultPingTimeout},
	} {
		cfg, err := docket.ParsePoolConfig(tc.connString)
		if err != nil {
			t.Errorf("%q: %v", tc.connString, err)
			continue
		}
		if got := cfg.ConnConfig.ConnectTimeout; got != tc.connect {
			t.Errorf("%q: ConnectTimeout = %s, want %s", tc.connString, got, tc.connect)
		}
		if cfg.PingTimeout != tc.ping {
			t.Errorf("%q: PingTimeout = %s, want %s", tc.connString, cfg.PingTimeout, tc.ping)
		}
	}
	if _, err := docket.ParsePoolConfig("postgres://u@127.0.0.1/db?connect_timeout=soon"); err == nil {
		t.Error("an invalid connect_timeout parsed")
	}
}

func TestParsePoolConfigKeepsEnvConnectTimeout(t *testing.T) {
	for env, want := range map[string]time.Duration{"7": 7 * time.Second, "0": 0} {
		t.Setenv("PGCONNECT_TIMEOUT", env)
		cfg, err := docket.ParsePoolConfig("postgres://u@127.0.0.1/db")
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.ConnConfig.ConnectTimeout; got != want {
			t.Errorf("PGCONNECT_TIMEOUT=%s: ConnectTimeout = %s, want %s", env, got, want)
		}
	}
}

// proxied starts a fault proxy to the package's database and returns it
// with a connection string that goes through it.
func proxied(t *testing.T) (*faultproxy.Proxy, string) {
	t.Helper()
	p, url, err := faultproxy.ForPostgres(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, url
}

// newPool opens a pool of cfg through p. When the test ends, p refuses
// before the pool closes: pgx cleans up a connection that failed by sending
// a cancel request, which a blackhole would hold for 15 s.
func newPool(t *testing.T, p *faultproxy.Proxy, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	t.Cleanup(p.Refuse)
	return pool
}

// pid returns the server process of the connection the pool hands out.
func pid(t *testing.T, pool *pgxpool.Pool) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	return conn.Conn().PgConn().PID()
}

// ping pings pool with a deadline far beyond the timeouts under test, and
// returns the error and how long it took.
func ping(pool *pgxpool.Pool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := pool.Ping(ctx)
	return time.Since(start), err
}

// pingFailsWithin fails the test unless a ping fails after between min and max.
func pingFailsWithin(t *testing.T, pool *pgxpool.Pool, minimum, maximum time.Duration) {
	t.Helper()
	took, err := ping(pool)
	if err == nil {
		t.Fatalf("ping succeeded after %s through a blackhole", took)
	}
	if took < minimum || took > maximum {
		t.Fatalf("ping failed after %s, want between %s and %s: %v", took, minimum, maximum, err)
	}
}

// TestPoolConnectBlackholed: a pool whose server stopped answering fails to
// connect within its connect timeout instead of pgxpool's 2 minutes, and
// connects again once the network is back.
func TestPoolConnectBlackholed(t *testing.T) {
	t.Parallel()
	p, url := proxied(t)
	cfg, err := docket.ParsePoolConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = time.Second // DefaultConnectTimeout, shortened
	pool := newPool(t, p, cfg)

	p.Blackhole()
	for range 2 {
		pingFailsWithin(t, pool, 900*time.Millisecond, 4*time.Second)
		// The attempt is over, not left "constructing" in its slot.
		if n := pool.Stat().ConstructingConns(); n != 0 {
			t.Fatalf("%d connections constructing after the ping failed, want 0", n)
		}
	}

	p.Restore()
	if took, err := ping(pool); err != nil {
		t.Fatalf("ping after Restore: %v after %s", err, took)
	}
}

// TestPoolConnectTimeoutFromConnString: the connection string's
// connect_timeout, not Docket's 5 s default, bounds the connect.
func TestPoolConnectTimeoutFromConnString(t *testing.T) {
	t.Parallel()
	p, url := proxied(t)
	cfg, err := docket.ParsePoolConfig(url + "&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, p, cfg)
	p.Blackhole()
	pingFailsWithin(t, pool, 900*time.Millisecond, 4*time.Second)
}

// TestPoolPingTimeoutDropsDeadConnection: an idle connection that stopped
// answering is dropped by the pool's liveness ping, so that Acquire fails
// (or finds another connection) within the ping and connect timeouts
// instead of waiting on the dead one; once the network is back the pool
// connects again.
func TestPoolPingTimeoutDropsDeadConnection(t *testing.T) {
	t.Parallel()
	p, url := proxied(t)
	cfg, err := docket.ParsePoolConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.PingTimeout = time.Second // DefaultPingTimeout, shortened
	// pgxpool pings connections idle for more than a second; ping on every
	// acquire instead of waiting for that second.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	pool := newPool(t, p, cfg)
	before := pid(t, pool)

	p.Blackhole()
	// A ping timeout (1 s) for the idle connection, then a connect timeout
	// (1 s) for a new one.
	pingFailsWithin(t, pool, 1900*time.Millisecond, 5*time.Second)

	// The pool connects again, and the dead connection is not handed out.
	p.Restore()
	if after := pid(t, pool); after == before {
		t.Errorf("after Restore the pool handed out the connection it found dead (server pid %d)", before)
	}
}
