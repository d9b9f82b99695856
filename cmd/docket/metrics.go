package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/metricserver"
	"github.com/docketq/docket/migrate"
)

func metricsCommand() *command {
	return &command{
		name:    "metrics",
		summary: "serve the status as Prometheus metrics",
		verbs: []*command{{
			name:    "serve",
			summary: "serve the status views as Prometheus metrics at /metrics (every scrape reads them), with /healthz, /readyz and an index at /",
			flags: func(fs *flag.FlagSet) action {
				var db dbFlags
				db.register(fs)
				var th thresholdFlags
				th.register(fs)
				addr := fs.String("addr", ":9471", "address to serve /metrics, /healthz and /readyz on")
				return func(ctx context.Context, pos []string, _, errOut io.Writer) error {
					if err := wantArgs(pos, 0, ""); err != nil {
						return err
					}
					if err := th.check(); err != nil {
						return err
					}
					if err := checkAddr("--addr", *addr); err != nil {
						return err
					}
					return serveMetrics(ctx, db, th, *addr, errOut)
				}
			},
		}},
	}
}

func serveMetrics(ctx context.Context, db dbFlags, th thresholdFlags, addr string, errOut io.Writer) error {
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := metricserver.NewRegistry()
	reg.MustRegister(admin.NewStatusCollector(pool, client, th.th))
	m, err := migrate.New(client.Schema())
	if err != nil {
		return err
	}
	ready, err := metricserver.SchemaReadiness(pool, client.Schema(), m.Latest())
	if err != nil {
		return err
	}
	srv, err := metricserver.Serve(addr, reg, ready, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(errOut, "serving Docket metrics of schema %s at http://%s/metrics\n", db.schema, srv.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Close(sctx)
}
