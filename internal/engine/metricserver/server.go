// Package metricserver serves a Docket process's Prometheus metrics over
// HTTP with /healthz and /readyz: the worker's (Config.MetricsAddr), the
// relay's and `docket metrics serve`'s, so a process that runs no worker
// needs none to be scraped.
package metricserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry with the Go runtime and process
// collectors, ready for a worker's collectors and the status views'.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Server serves a gatherer's metrics at /metrics over HTTP, with /healthz,
// /readyz and an index at /.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on addr ("host:port"; ":0" picks a free port) and serves g
// at /metrics in the background until Close. ready decides /readyz (see
// SchemaReadiness); nil means ready while the server runs. notes, when not
// nil, gives the warnings /readyz adds to its answer (see healthMux).
func Serve(addr string, g prometheus.Gatherer, ready Readiness, notes func() []string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	healthMux(mux, ready, notes)
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to ctx for scrapes in progress.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
