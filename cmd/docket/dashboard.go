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
	"strings"
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
browser sends once as ?token=... (a cookie then keeps it for --token-max-age).
Without a token it answers only requests addressed to localhost, a loopback
address or a host of --allowed-hosts, so that another site's page cannot
reach it by rebinding its own name to this machine; with a token, any host
unless --allowed-hosts is given (then those and the --addr host). Behind a reverse
proxy that sets X-Forwarded-Proto and X-Forwarded-For, --trust-proxy makes the
cookies Secure over https and logs the client's address. Refused requests and
every action are logged to stderr with the remote address. Payloads are hidden
unless --show-payloads.`,
		flags: dashboardServe,
	}
}

func dashboardServe(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	token := fs.String("token", "", "token required on every request (default $DOCKET_DASHBOARD_TOKEN)")
	readOnly := fs.Bool("read-only", false, "show only: hide and refuse every action")
	payloads := fs.Bool("show-payloads", false, "show job payloads and results (they may hold personal data)")
	allowed := fs.String("allowed-hosts", "", "comma-separated host names or IPs (no port) the dashboard answers to besides loopback")
	trustProxy := fs.Bool("trust-proxy", false, "a reverse proxy in front sets X-Forwarded-Proto and X-Forwarded-For: trust them")
	maxAge := fs.Duration("token-max-age", 0, "how long ?token= keeps a browser signed in (default 12h)")
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
		if !dashboard.IsLoopback(host) && *token == "" {
			return fmt.Errorf("%w: --addr %s is not loopback: set --token or DOCKET_DASHBOARD_TOKEN", errUsage, *addr)
		}
		cfg := dashboard.Config{Schema: db.schema, ReadOnly: *readOnly, ShowPayloads: *payloads, Token: *token,
			AllowedHosts: listenHosts(*allowed, host, *token != ""), TrustProxyHeaders: *trustProxy,
			TokenMaxAge: *maxAge, Logger: slog.New(slog.NewTextHandler(errOut, nil))}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		_, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		h, err := dashboard.Handler(pool, cfg)
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

// listenHosts is the dashboard's AllowedHosts: the --allowed-hosts list,
// and the host of --addr when the Host is checked (no token, or a list
// given) and the address names one interface rather than all of them.
func listenHosts(list, listen string, token bool) []string {
	var hosts []string
	for _, h := range strings.Split(list, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if listen == "" || net.ParseIP(listen).IsUnspecified() || token && len(hosts) == 0 {
		return hosts
	}
	return append(hosts, listen)
}
