package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The security model (see docs/dashboard.md): the mounting application's
// auth first, then the Host check (a page on another site whose name was
// rebound to this machine must not be answered), the optional token, a
// double-submit CSRF token on every POST, read-only mode, and a
// Content-Security-Policy that lets the pages run only the scripts and
// styles they are served with.
const (
	// csp allows this origin's scripts, styles, images and fetches only:
	// no inline script or style, no frames, forms posting here only; the
	// pages' <base> (the mount prefix) must be of this origin too.
	csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'"

	tokenCookie = "docket_dashboard_token"
	csrfCookie  = "docket_dashboard_csrf"
	csrfField   = "csrf"

	// maxForm bounds a POST body: a bulk action's ids fit many times over.
	maxForm = 1 << 20

	// defaultTokenMaxAge is how long a browser stays signed in by ?token=:
	// a working day, so a browser left open overnight asks again.
	defaultTokenMaxAge = 12 * time.Hour

	// maxLogged bounds a client-chosen value (Host, Origin, path,
	// X-Forwarded-For) in a log line.
	maxLogged = 200
)

type (
	csrfKey   struct{}
	loggerKey struct{}
)

// guard wraps every request: security headers, a panic turned into a plain
// 500 page, the Host check, the token check, and the CSRF cookie a page's
// forms repeat.
func (d *dash) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				d.cfg.Logger.Error("dashboard: panic", slog.String("path", r.URL.Path))
				d.fail(w, r, http.StatusInternalServerError, "internal error")
			}
		}()
		if (d.cfg.Token == "" || len(d.hosts) > 0) && !d.hostAllowed(r.Host) {
			d.logRefused(r, http.StatusForbidden, "host not allowed")
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "403 Forbidden: this dashboard is not served on this host name. "+
				"It answers on localhost, 127.0.0.1 and [::1], and on the hosts its operator allowed "+
				"(dashboard.Config.AllowedHosts, docket dashboard --allowed-hosts).\n")
			return
		}
		if d.cfg.Token != "" && !d.tokenOK(w, r) {
			return
		}
		token := ""
		if c, err := r.Cookie(csrfCookie); err == nil && validToken(c.Value) {
			token = c.Value
		} else {
			token = newToken()
			http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: token, Path: base(r), HttpOnly: true,
				Secure: d.secure(r), SameSite: http.SameSiteStrictMode})
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), csrfKey{}, token)))
	})
}

// allowedHosts checks and normalises Config.AllowedHosts: lower case,
// without IPv6 brackets or a final dot.
func allowedHosts(list []string) ([]string, error) {
	hosts := make([]string, 0, len(list))
	for _, h := range list {
		if _, _, err := net.SplitHostPort(h); err == nil {
			return nil, fmt.Errorf("dashboard: AllowedHosts entry %q has a port: give the host alone (any port is accepted)", h)
		}
		n := hostName(h)
		if n == "" || strings.ContainsAny(n, " /\\@") {
			return nil, fmt.Errorf("dashboard: AllowedHosts entry %q is not a host name or IP address", h)
		}
		hosts = append(hosts, n)
	}
	return hosts, nil
}

// hostName is the host part of a Host header (a name or an IP address,
// with or without port), in lower case, without IPv6 brackets or the final
// dot of a fully qualified name.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ".")
	return strings.ToLower(h)
}

// hostAllowed reports whether a Host header names this dashboard: a
// loopback host or one of Config.AllowedHosts, whatever the port. A page
// whose own name was rebound to this machine sends its own name, and is
// refused.
func (d *dash) hostAllowed(hostport string) bool {
	h := hostName(hostport)
	if IsLoopback(h) {
		return true
	}
	for _, a := range d.hosts {
		if h == a {
			return true
		}
	}
	return false
}

// IsLoopback reports whether host, a name or an IP address without port,
// names only this machine: "localhost" or a loopback address (127.0.0.0/8,
// ::1). An empty host (every interface) is not loopback.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenOK checks the configured token and answers 401 when it is missing
// or wrong. A page opened with ?token= stores it in a cookie and redirects
// to the URL without it, so it stays out of history and logs.
func (d *dash) tokenOK(w http.ResponseWriter, r *http.Request) bool {
	want := []byte(d.cfg.Token)
	eq := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	if auth, ok := bearer(r.Header.Get("Authorization")); ok && eq(auth) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && eq(c.Value) {
		return true
	}
	if q := r.URL.Query(); r.Method == http.MethodGet && q.Has("token") && eq(q.Get("token")) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: d.cfg.Token, Path: base(r),
			MaxAge: int(d.cfg.TokenMaxAge / time.Second), HttpOnly: true, Secure: d.secure(r),
			SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := url.URL{Path: strings.TrimSuffix(base(r), "/") + r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="docket dashboard"`)
	d.refuse(w, r, http.StatusUnauthorized, "no or wrong token",
		"this dashboard needs its token: open it with ?token=… or send Authorization: Bearer …")
	return false
}

// bearer returns the credentials of an Authorization header of the Bearer
// scheme, whose name is case-insensitive (RFC 7235).
func bearer(header string) (string, bool) {
	scheme, cred, _ := strings.Cut(header, " ")
	cred = strings.TrimLeft(cred, " ")
	return cred, strings.EqualFold(scheme, "Bearer") && cred != ""
}

// secure reports whether the request came over TLS: to this server, or to
// a trusted proxy that says so in X-Forwarded-Proto.
func (d *dash) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !d.cfg.TrustProxyHeaders {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",") // the first hop's
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// actor names who a request acts for in the logs: "token" when the
// dashboard's token let it in, "local" when no token is configured (the
// mounting application's auth, or loopback, let it in).
func (d *dash) actor() string {
	if d.cfg.Token != "" {
		return "token"
	}
	return "local"
}

// from is where a request came from, as log attributes: the peer's
// address, and behind a trusted proxy the X-Forwarded-For it sent.
func (d *dash) from(r *http.Request) []any {
	attrs := []any{slog.String("remote", r.RemoteAddr)}
	if fwd := r.Header.Values("X-Forwarded-For"); d.cfg.TrustProxyHeaders && len(fwd) > 0 {
		attrs = append(attrs, slog.String("forwarded_for", clip(strings.Join(fwd, ", "))))
	}
	return attrs
}

// refuse logs a refused request and answers with code and msg.
func (d *dash) refuse(w http.ResponseWriter, r *http.Request, code int, reason, msg string) {
	d.logRefused(r, code, reason)
	d.fail(w, r, code, msg)
}

// logRefused logs a refused request: why, where it came from, and the
// Host and Origin it named; never its query (it may hold a wrong token)
// or its body.
func (d *dash) logRefused(r *http.Request, code int, reason string) {
	attrs := []any{slog.Int("status", code), slog.String("reason", reason), slog.String("method", r.Method),
		slog.String("path", clip(r.URL.Path)), slog.String("host", clip(r.Host))}
	if o := r.Header.Get("Origin"); o != "" {
		attrs = append(attrs, slog.String("origin", clip(o)))
	}
	d.cfg.Logger.Warn("dashboard: request refused", append(attrs, d.from(r)...)...)
}

// logger is the logger of a request: an action's carries who did it
// (actor) and from where.
func (d *dash) logger(r *http.Request) *slog.Logger {
	if l, ok := r.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return d.cfg.Logger
}

// clip cuts a client-chosen value to maxLogged bytes for a log line.
func clip(s string) string {
	if len(s) > maxLogged {
		return strings.ToValidUTF8(s[:maxLogged], "") + "…"
	}
	return s
}

// action wraps a state-changing handler: refused in read-only mode, and
// unless the form repeats the CSRF cookie's token and any Origin header is
// this host. The handler's log lines (d.logger) say who acted and from
// where.
func (d *dash) action(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d.cfg.ReadOnly {
			d.refuse(w, r, http.StatusForbidden, "read-only", "the dashboard is read-only")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			d.fail(w, r, http.StatusBadRequest, "the form could not be read")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			if u, err := url.Parse(origin); err != nil || u.Host != r.Host {
				d.refuse(w, r, http.StatusForbidden, "cross-origin", "cross-origin request refused")
				return
			}
		}
		c, err := r.Cookie(csrfCookie)
		sent := r.PostFormValue(csrfField)
		if sent == "" {
			sent = r.Header.Get("X-CSRF-Token")
		}
		if err != nil || sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(c.Value)) != 1 {
			d.refuse(w, r, http.StatusForbidden, "csrf", "missing or wrong CSRF token: reload the page and try again")
			return
		}
		log := d.cfg.Logger.With(append([]any{slog.String("actor", d.actor())}, d.from(r)...)...)
		h(w, r.WithContext(context.WithValue(r.Context(), loggerKey{}, log)))
	}
}

func csrfToken(r *http.Request) string {
	s, _ := r.Context().Value(csrfKey{}).(string)
	return s
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func validToken(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
