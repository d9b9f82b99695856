package metricserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Readiness reports why the metrics server is not ready to serve, or nil
// when it is; /readyz answers 200 on nil and 503 with the error otherwise.
type Readiness func(ctx context.Context) error

// readyTimeout bounds one readiness check, so that a hung database makes
// /readyz answer 503 before the prober gives up on it.
const readyTimeout = 3 * time.Second

// SchemaReadiness returns a Readiness that passes when db answers a ping and
// the schema holds migration latest (migrate.Migrator.Latest: every
// migration this build of Docket knows). It only reads: an unmigrated
// schema is reported, never created.
func SchemaReadiness(db *pgxpool.Pool, schema string, latest int) (Readiness, error) {
	schema, err := pgsql.Schema(schema)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		if err := db.Ping(ctx); err != nil {
			return fmt.Errorf("database unreachable: %w", err)
		}
		var exists bool
		if err := db.QueryRow(ctx, `SELECT to_regclass($1::text) IS NOT NULL`, `"`+schema+`".docket_migrations`).Scan(&exists); err != nil {
			return fmt.Errorf("migration check: %w", err)
		}
		if !exists {
			return fmt.Errorf("schema %s is not migrated (want version %d)", schema, latest)
		}
		var version int
		if err := db.QueryRow(ctx, pgsql.Render(`SELECT coalesce(max(version), 0) FROM {{schema}}.docket_migrations`, schema)).Scan(&version); err != nil {
			return fmt.Errorf("migration check: %w", err)
		}
		if version < latest {
			return fmt.Errorf("schema %s is at migration %d, want %d", schema, version, latest)
		}
		return nil
	}, nil
}

// healthMux returns the metrics server's routes besides /metrics: /healthz
// (alive while the process serves), /readyz (ready's verdict, then one
// "warning:" line per note: what does not make the process unready but
// deserves an operator's eye) and / (an index of what is served, instead of
// a 404 for a curious operator). notes may be nil.
func healthMux(mux *http.ServeMux, ready Readiness, notes func() []string) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var warnings []string
		if notes != nil {
			warnings = notes()
		}
		defer func() {
			for _, n := range warnings {
				fmt.Fprintln(w, "warning:", n)
			}
		}()
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("readiness check timed out after %s: %w", readyTimeout, err)
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready:", err)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, `Docket metrics server
/metrics  Prometheus metrics
/healthz  200 while the process runs
/readyz   200 when the database answers and its schema is migrated; 503 with the reason otherwise;
          then a "warning:" line for each problem that does not stop the work (notifications lost)
`)
	})
}
