package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docketq/docket/handlers"
)

func runMetrics(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlagSet("metrics", errOut)
	var db dbFlags
	db.register(fs)
	var th thresholdFlags
	th.register(fs)
	addr := fs.String("addr", ":9471", "address to serve /metrics, /healthz and /readyz on")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: docket metrics serve [flags]\n\nServes the status views as Prometheus metrics at /metrics (every scrape reads them),\nwith /healthz, /readyz (database reachable, schema migrated) and an index at /.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "serve" {
		return fmt.Errorf("%w: want serve", errUsage)
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := handlers.NewMetricsRegistry()
	reg.MustRegister(handlers.NewStatusCollector(pool, client, th.th))
	ready, err := handlers.SchemaReadiness(pool, client.Schema())
	if err != nil {
		return err
	}
	srv, err := handlers.ServeMetrics(*addr, reg, ready)
	if err != nil {
		return err
	}
	fmt.Fprintf(errOut, "serving Docket metrics of schema %s at http://%s/metrics\n", db.schema, srv.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Close(sctx)
}
