package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/docketq/docket/dashboard"
)

func dashboardCommand() *command {
	return &command{
		name:    "dashboard",
		summary: "serve the web dashboard (127.0.0.1:8080; a token on any other address)",
		about: `The dashboard shows queues, jobs, dead letters, schedules and workers, and acts
on them. It listens on loopback unless --addr says otherwise; any address that
is not loopback requires a token (--token or $DOCKET_DASHBOARD_TOKEN), which the
browser sends once as ?token=... Payloads are hidden unless --show-payloads.`,
		flags: dashboardServe,
	}
}

func dashboardServe(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	token := fs.String("token", "", "token required on every request (default $DOCKET_DASHBOARD_TOKEN)")
	readOnly := fs.Bool("read-only", false, "show only: hide and refuse every action")
	payloads := fs.Bool("show-payloads", false, "show job payloads (they may hold personal data)")
	return func(ctx context.Context, pos []string, out, errOut io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *token == "" {
			*token = os.Getenv("DOCKET_DASHBOARD_TOKEN")
		}
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			return fmt.Errorf("%w: --addr %q: %v", errUsage, *addr, err)
		}
		if !loopback(host) && *token == "" {
			return fmt.Errorf("%w: --addr %s is not loopback: set --token or DOCKET_DASHBOARD_TOKEN", errUsage, *addr)
		}
		_, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		h, err := dashboard.Handler(pool, dashboard.Config{Schema: db.schema, ReadOnly: *readOnly,
			ShowPayloads: *payloads, Token: *token, Logger: slog.New(slog.NewTextHandler(errOut, nil))})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintf(out, "dashboard on http://%s/\n", ln.Addr())
		go func() {
			<-ctx.Done()
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(shut)
		}()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// loopback reports whether host names only this machine: "localhost" or a
// loopback IP (127.0.0.0/8, ::1). An empty host (all interfaces) is not.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
