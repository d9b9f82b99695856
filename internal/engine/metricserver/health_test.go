package metricserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// get fetches path from the server and returns the status and body.
func get(t *testing.T, srv *Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + srv.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func serveHealth(t *testing.T, ready Readiness) *Server {
	t.Helper()
	srv, err := Serve("127.0.0.1:0", prometheus.NewRegistry(), ready, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(t.Context()) })
	return srv
}

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	pool, migrated := pgtest.PoolN(t, 4), pgtest.Schema(t)
	unmigrated := pgtest.Schema(t)
	behind := pgtest.Schema(t)
	if m, err := migrate.New(migrated); err != nil {
		t.Fatal(err)
	} else if _, err := m.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	m, err := migrate.New(behind)
	if err != nil {
		t.Fatal(err)
	}
	migs := m.Migrations() // versions may have gaps: take the one before the latest
	if _, err := m.UpTo(t.Context(), pool, migs[len(migs)-2].Version); err != nil {
		t.Fatal(err)
	}
	closed := pgtest.PoolN(t, 2)
	closed.Close()

	cases := []struct {
		name   string
		db     *pgxpool.Pool
		schema string
		want   int
		reason string
	}{
		{"migrated", pool, migrated, http.StatusOK, "ready"},
		{"unmigrated", pool, unmigrated, http.StatusServiceUnavailable, "is not migrated"},
		{"behind", pool, behind, http.StatusServiceUnavailable, "is at migration"},
		{"closed pool", closed, migrated, http.StatusServiceUnavailable, "database unreachable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ready, err := SchemaReadiness(c.db, c.schema, m.Latest())
			if err != nil {
				t.Fatal(err)
			}
			srv := serveHealth(t, ready)
			if code, body := get(t, srv, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
				t.Errorf("/healthz = %d %q, want 200 ok", code, body)
			}
			if code, body := get(t, srv, "/readyz"); code != c.want || !strings.Contains(body, c.reason) {
				t.Errorf("/readyz = %d %q, want %d containing %q", code, body, c.want, c.reason)
			}
		})
	}
	// The unmigrated schema stays as it was: readiness reads, never creates.
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, unmigrated).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the readiness check created %d tables in schema %s", n, unmigrated)
	}
}

func TestMetricsServerIndex(t *testing.T) {
	t.Parallel()
	srv := serveHealth(t, nil)
	code, body := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("/ = %d, want 200", code)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if !strings.Contains(body, path) {
			t.Errorf("the index does not name %s:\n%s", path, body)
		}
	}
	if code, _ := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with no readiness check = %d, want 200", code)
	}
	if code, _ := get(t, srv, "/nothing-here"); code != http.StatusNotFound {
		t.Errorf("an unknown path = %d, want 404", code)
	}
}
