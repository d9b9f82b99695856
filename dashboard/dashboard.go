package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures the dashboard. The zero value serves every page and
// action of schema "public", hides payloads, asks for no token and
// answers only requests addressed to a loopback host (localhost,
// 127.0.0.1).
type Config struct {
	// Schema is the schema of Docket's tables. Empty means "public".
	Schema string
	// ReadOnly hides every action and refuses every state-changing request
	// (403): the pages only show.
	ReadOnly bool
	// ShowPayloads shows job payloads (args), and the results their
	// handlers recorded, on the job page. Both may hold personal data: off
	// by default, and never logged either way.
	ShowPayloads bool
	// Token, when set, is required on every request: as a bearer token
	// (Authorization: Bearer, the scheme's name in any case), or once as
	// ?token= on a page, which sets a cookie for TokenMaxAge and redirects
	// to the same page without it. docket dashboard requires one on any
	// address that is not loopback. Empty means the mounting application's
	// own auth is the only guard, and the Host check below applies.
	Token string
	// AllowedHosts are the host names and IP addresses (without port) the
	// dashboard answers to besides loopback ones (localhost, 127.0.0.0/8,
	// ::1), compared case-insensitively, on any port. Without a Token, a
	// request whose Host header names another host is refused with 403: a
	// page on another site whose name was rebound to this machine (DNS
	// rebinding) can neither read nor act. With a Token, the Host is
	// checked only when AllowedHosts is set. Nil means loopback only; list
	// the names users reach the dashboard by when it is mounted in a
	// service or behind a proxy that passes the Host on. An entry with a
	// port, or that is not a host name or address, is refused.
	AllowedHosts []string
	// TrustProxyHeaders says every request comes through a reverse proxy
	// that sets X-Forwarded-Proto and X-Forwarded-For: cookies are Secure
	// when X-Forwarded-Proto is https, and refusal and action logs carry
	// X-Forwarded-For. False (the default) ignores both headers; leave it
	// so when clients can reach the dashboard directly, as they could send
	// them themselves.
	TrustProxyHeaders bool
	// TokenMaxAge is how long the cookie set by ?token= keeps a browser
	// signed in (its Max-Age). Zero means 12 hours; a negative value or
	// one under a second is refused.
	TokenMaxAge time.Duration
	// Thresholds decide the warnings of the overview, as docket status.
	Thresholds admin.Thresholds
	// MaxReplayRate caps the rate, in jobs per second, at which a dead
	// letter group (or every dead job a filter matches) is replayed from the
	// pages, as a task (see docs/dashboard.md, "Tasks"). Zero means 100.
	MaxReplayRate float64
	// Refresh is how often live parts of the pages poll. Zero means 2s.
	Refresh time.Duration
	// Logger receives action lines (who acted: "token" or "local", from
	// which address), refused requests (401 and 403, with the address, Host
	// and Origin) and errors; job ids and kinds, never payloads or tokens.
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Validate reports the first setting Handler would refuse (an invalid
// schema name, AllowedHosts entry or TokenMaxAge), without a database.
func (c Config) Validate() error {
	if _, err := admin.New(admin.Config{Schema: c.Schema}); err != nil {
		return err
	}
	if c.TokenMaxAge != 0 && c.TokenMaxAge < time.Second {
		return fmt.Errorf("dashboard: TokenMaxAge %v: want zero (12h) or at least a second", c.TokenMaxAge)
	}
	_, err := allowedHosts(c.AllowedHosts)
	return err
}

// Handler returns the dashboard as an http.Handler for pool's database.
// Mount it under any path (with http.StripPrefix); its links follow the
// prefix. It fails on a nil pool and where cfg.Validate does.
func Handler(pool *pgxpool.Pool, cfg Config) (http.Handler, error) {
	if pool == nil {
		return nil, errors.New("dashboard: nil pool")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hosts, _ := allowedHosts(cfg.AllowedHosts)
	ops, err := admin.New(admin.Config{Schema: cfg.Schema})
	if err != nil {
		return nil, err
	}
	if cfg.MaxReplayRate <= 0 {
		cfg.MaxReplayRate = 100
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TokenMaxAge == 0 {
		cfg.TokenMaxAge = defaultTokenMaxAge
	}
	d := &dash{cfg: cfg, hosts: hosts, pool: pool, ops: ops, pages: parsePages(), tasks: &taskList{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.overview)
	mux.HandleFunc("GET /jobs", d.jobs)
	mux.HandleFunc("GET /jobs/{id}", d.job)
	mux.HandleFunc("GET /dead", d.dead)
	mux.HandleFunc("GET /schedules", d.schedules)
	mux.HandleFunc("GET /workers", d.workers)
	mux.HandleFunc("GET /throughput", d.throughput)
	mux.HandleFunc("GET /tasks", d.tasksPage)
	mux.HandleFunc("POST /tasks/stop", d.action(d.stopTask))
	mux.HandleFunc("GET /assets/{name}", d.assetHandler)
	mux.HandleFunc("GET /favicon.ico", d.favicon)
	mux.HandleFunc("POST /jobs/action", d.action(d.jobAction))
	mux.HandleFunc("POST /jobs/matching", d.action(d.matchingAction))
	mux.HandleFunc("POST /queues/action", d.action(d.queueAction))
	mux.HandleFunc("POST /dead/replay", d.action(d.replayGroup))
	mux.HandleFunc("POST /dead/purge", d.action(d.purge))
	mux.HandleFunc("POST /dead/discard", d.action(d.discardGroup))
	mux.HandleFunc("POST /schedules/action", d.action(d.scheduleAction))
	mux.HandleFunc("GET /limits", d.limits)
	mux.HandleFunc("POST /limits/set", d.action(d.setLimit))
	mux.HandleFunc("POST /limits/remove", d.action(d.removeLimit))
	mux.HandleFunc("GET /workflows", d.workflows)
	mux.HandleFunc("GET /workflows/{id}", d.workflow)
	mux.HandleFunc("POST /workflows/cancel", d.action(d.cancelWorkflow))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, "no such page")
	})
	return d.guard(mux), nil
}

// dash is the dashboard's state; it holds no connection of its own.
type dash struct {
	cfg   Config
	hosts []string // Config.AllowedHosts, normalised by allowedHosts
	pool  *pgxpool.Pool
	ops   *admin.Client
	pages map[string]*template.Template
	tasks *taskList // long actions running in this process (tasks.go)
	// minutes caches the throughput chart's settled minutes (throughput.go).
	minutes minutes
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string // the menu entry to highlight
	Base     string // the mount prefix, ending in "/"
	CSRF     string
	ReadOnly bool
	Refresh  int           // milliseconds between polls of live parts
	Every    time.Duration // the same, for people
	Tasks    int           // tasks running, for the menu
	Msg      string
	Data     any
}

// base is the prefix the handler is mounted under: the part of the
// request's path that http.StripPrefix took off, plus "/".
func base(r *http.Request) string {
	full := r.URL.Path
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		full = u.Path
	}
	b := strings.TrimSuffix(full, r.URL.Path)
	return b + "/"
}

// render writes a page, or its "live" block alone when the request is a
// poll (?live=1).
func (d *dash) render(w http.ResponseWriter, r *http.Request, name string, v view) {
	v.Base, v.CSRF, v.ReadOnly = base(r), csrfToken(r), d.cfg.ReadOnly
	v.Refresh, v.Every = int(d.cfg.Refresh/time.Millisecond), d.cfg.Refresh
	v.Tasks = d.tasks.running()
	v.Msg = r.URL.Query().Get("msg")
	tmpl := "page"
	if r.URL.Query().Get("live") == "1" {
		tmpl = "live"
	}
	var buf strings.Builder
	if err := d.pages[name].ExecuteTemplate(&buf, tmpl, v); err != nil {
		d.cfg.Logger.Error("dashboard: render", slog.String("page", name), slog.String("error", err.Error()))
		d.fail(w, r, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, buf.String())
}

// fail answers with an error page (or a short text for a poll) carrying
// msg: never a stack trace or a database error's details.
func (d *dash) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	v := view{Title: fmt.Sprintf("%d %s", code, http.StatusText(code)), Base: base(r), Data: msg}
	if err := d.pages["error"].ExecuteTemplate(w, "page", v); err != nil {
		d.cfg.Logger.Error("dashboard: render error page", slog.String("error", err.Error()))
	}
}

// internal logs a failed read and answers 500 without its details.
func (d *dash) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	d.logger(r).Error("dashboard: "+what, slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	d.fail(w, r, http.StatusInternalServerError, what+" failed; the server log says why")
}

// back redirects to the page an action came from (its form's "return")
// with a message.
func back(w http.ResponseWriter, r *http.Request, msg string) { backTo(w, r, returnPath(r), msg) }

// backTo redirects to a path of this dashboard with a message.
func backTo(w http.ResponseWriter, r *http.Request, to, msg string) {
	u, err := url.Parse(to)
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	q := u.Query()
	q.Set("msg", msg)
	q.Del("live")
	u.RawQuery = q.Encode()
	http.Redirect(w, r, strings.TrimSuffix(base(r), "/")+u.String(), http.StatusSeeOther)
}
