package pgsrv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// localURL is the admin URL of the conventional development server: user
// postgres, database postgres, on 127.0.0.1:5432, no password.
const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// probeTimeout bounds the check for a server on 127.0.0.1:5432, so that a
// firewalled or hung port does not stall every test binary.
const probeTimeout = 2 * time.Second

// Server is a reachable PostgreSQL.
type Server struct {
	// URL is an admin connection string: a superuser (or a user who may
	// create databases) on database "postgres", or whatever DATABASE_URL says.
	URL string

	// Private is the cluster started by Discover, or nil when the server was
	// already running (DATABASE_URL or 127.0.0.1:5432).
	Private *Cluster
}

// Discover returns a PostgreSQL server following the order described in the
// package documentation. When the result has a Private cluster, the caller
// owns it and must call [Server.Stop].
func Discover(ctx context.Context) (*Server, error) { return DiscoverWithRoom(ctx, 0) }

// DiscoverWithRoom is [Discover] for callers that open many connections at
// once, such as a test binary: a server on 127.0.0.1:5432 with fewer than
// room connections free (max_connections less those in use and those
// reserved for superusers) is passed over for a private cluster, so that a
// small shared server refuses no test with "too many clients". DATABASE_URL
// and DOCKET_PG=server are used as they are.
func DiscoverWithRoom(ctx context.Context, room int) (*Server, error) {
	switch mode := os.Getenv("DOCKET_PG"); mode {
	case "private":
		return startPrivate(ctx)
	case "server":
		if err := probe(ctx, localURL); err != nil {
			return nil, fmt.Errorf("pgsrv: DOCKET_PG=server but no server accepts user postgres on 127.0.0.1:5432: %w", err)
		}
		return &Server{URL: localURL}, nil
	case "", "auto":
	default:
		return nil, fmt.Errorf("pgsrv: DOCKET_PG=%q: want private, server or auto (or unset)", mode)
	}

	if u := os.Getenv("DATABASE_URL"); u != "" {
		return &Server{URL: u}, nil
	}
	// Asking for the free connections is the probe: one connection.
	free, probeErr := freeConnections(ctx, localURL)
	if probeErr == nil {
		if free >= room {
			return &Server{URL: localURL}, nil
		}
		s, err := startPrivate(ctx)
		if err != nil {
			return nil, fmt.Errorf("pgsrv: 127.0.0.1:5432 has %d connections free, fewer than the %d needed, and a private cluster did not start: %w", free, room, err)
		}
		return s, nil
	}
	s, err := startPrivate(ctx)
	if errors.Is(err, errNoBinaries) {
		return nil, fmt.Errorf("pgsrv: no PostgreSQL found: DATABASE_URL is not set, "+
			"127.0.0.1:5432 did not accept user postgres (%v), "+
			"and %w", probeErr, err)
	}
	return s, err
}

// Stop stops and removes the private cluster, if Discover started one. It is
// a no-op for a server that was already running.
func (s *Server) Stop() error {
	if s == nil || s.Private == nil {
		return nil
	}
	return s.Private.Stop()
}

func startPrivate(ctx context.Context) (*Server, error) {
	c, err := StartCluster(ctx)
	if err != nil {
		return nil, err
	}
	return &Server{URL: c.URL(), Private: c}, nil
}

// probe connects to url and runs SELECT 1 within probeTimeout.
func probe(ctx context.Context, url string) error {
	_, err := queryInt(ctx, url, "SELECT 1")
	return err
}

// freeConnections returns, within probeTimeout, how many more connections
// an ordinary user may open on the server at url.
func freeConnections(ctx context.Context, url string) (int, error) {
	return queryInt(ctx, url, `SELECT current_setting('max_connections')::int
		- current_setting('superuser_reserved_connections')::int
		- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')`)
}

// queryInt connects to url and runs sql, which returns one integer, within
// probeTimeout.
func queryInt(ctx context.Context, url, sql string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, sql).Scan(&n)
	return n, err
}
