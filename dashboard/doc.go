// Package dashboard is Docket's web dashboard: an http.Handler that shows
// queues, jobs, dead letters, schedules, worker processes, workflows and
// limits, and acts on them through the same operations as the docket CLI.
//
// # Mounting
//
// Handler returns a handler for a pool's database. Mount it behind the
// application's own authentication, under any prefix:
//
//	h, err := dashboard.Handler(pool, dashboard.Config{ReadOnly: !isAdmin})
//	mux.Handle("/docket/", requireStaff(http.StripPrefix("/docket", h)))
//
// Without a token, list the host names users reach it by in
// Config.AllowedHosts. `docket dashboard` serves it on 127.0.0.1:8080.
//
// # Pages
//
// Overview (per-queue backlog, lag, throughput chart, warnings as docket
// status raises them), Jobs (filters and keyset pages over live, dead and
// completed jobs), a job page, Dead letters (grouped by kind and error;
// replay a group at a rate, discard a group; purge by age), Schedules,
// Workers, Workflows (a list by state, and a page per workflow with a graph
// of its steps drawn as SVG on the server, workflow_graph.go), Limits
// (each key's running jobs and tokens; set, remove) and Tasks (replays
// running in this process: progress, stop).
// Every destructive action is confirmed on a page that counts the rows it
// will touch, and never touches more (confirm.go). Long replays run as
// tasks in the serving process (tasks.go): they outlive their page, and
// stop when the process exits. Pages are
// rendered on the server with html/template. Their live parts (an element
// with data-live) are polled by assets/app.js, which backs off while the
// server fails and pauses while the tab is hidden; the chart is drawn by
// uPlot, embedded (see assets.lock and `go generate`): the pages need no
// network.
//
// # Security
//
// Without Config.Token, only requests whose Host names a loopback host or
// one of Config.AllowedHosts are answered (403 otherwise), so a page whose
// name was rebound to this machine (DNS rebinding) can neither read nor
// act. Every state-changing request is a POST that must repeat the CSRF
// token of its cookie; Config.ReadOnly hides and refuses every action; an
// optional Config.Token is required on every request; the
// Content-Security-Policy allows only the dashboard's own scripts and
// styles. Refused requests and every action are logged with the remote
// address, actions with who acted. Payloads and job results are shown
// only with Config.ShowPayloads and never logged, and so are the payloads
// of workflow signals. Bad input gets an error page with
// its status, never a stack trace. A running job is never cancelled or
// deleted under its worker, and replays are rate-limited.
package dashboard
