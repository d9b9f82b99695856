package dashboard_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

// Every page answers 200 with the strict policy, shows what the schema
// holds, and never shows the payload.
func TestPages(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	for path, want := range map[string]string{
		"/":                                `data-queue="bounce"`,
		"/jobs":                            fmt.Sprintf(`data-id="%d"`, b.Running),
		"/jobs?state=dead&error=MAILBOX":   "smtp: 550 mailbox unavailable",
		fmt.Sprintf("/jobs/%d", b.Running): "Lease holder",
		fmt.Sprintf("/jobs/%d", b.Dead):    "Replay",
		"/dead":                            "smtp: 550 mailbox unavailable",
		"/schedules":                       "No schedules registered",
		"/workers":                         "No worker process",
		"/?live=1":                         `id="live"`,
		"/throughput":                      `"completed"`,
		"/assets/app.js":                   "data-live",
	} {
		code, body, h := get(t, c, b.Srv.URL+path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%s", path, code, want, body)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s shows the payload", path)
		}
		if strings.Contains(body, "tried 2 relays") {
			t.Errorf("GET %s shows a job's result, which may hold personal data like a payload", path)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
			t.Errorf("GET %s has inline script or style", path)
		}
	}
}

func TestPayloadShownOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ShowPayloads: true})
	if _, body, _ := get(t, client(t), fmt.Sprintf("%s/jobs/%d", b.Srv.URL, b.Ready)); !strings.Contains(body, secret) {
		t.Errorf("ShowPayloads: the job page hides the payload:\n%s", body)
	}
	// The result its handler recorded: indented, HTML-escaped once by the
	// template (no \u003c from a JSON encoder).
	want := `<pre id="result">{
  &#34;note&#34;: &#34;&lt;b&gt;tried 2 relays&lt;/b&gt;&#34;
}</pre>`
	if _, body, _ := get(t, client(t), fmt.Sprintf("%s/jobs/%d", b.Srv.URL, b.Dead)); !strings.Contains(body, want) {
		t.Errorf("ShowPayloads: the job page does not show the result as %s:\n%s", want, body)
	}
}

// Bad input gets its status and a message, never a stack trace.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	for path, want := range map[string]struct {
		code int
		text string
	}{
		"/jobs/abc":                     {400, "a job id is a positive number"},
		"/jobs/-4":                      {400, "a job id is a positive number"},
		"/jobs/99999999":                {404, "no job 99999999"},
		"/jobs?limit=100000":            {400, "page size 100000"},
		"/jobs?limit=many":              {400, "limit: want a page size"},
		"/jobs?state=finished":          {400, `unknown state &#34;finished&#34;`},
		"/jobs?after=x":                 {400, "after: want a job id"},
		"/jobs?kind=%00":                {400, "not text"},
		"/nowhere":                      {404, "no such page"},
		"/jobs?state=completed&error=x": {400, "completed jobs keep no error"},
	} {
		code, body, _ := get(t, c, b.Srv.URL+path)
		if code != want.code || !strings.Contains(body, want.text) {
			t.Errorf("GET %s: %d, want %d with %q:\n%s", path, code, want.code, want.text, body)
		}
		if strings.Contains(body, "goroutine") || strings.Contains(body, ".go:") {
			t.Errorf("GET %s shows a stack trace", path)
		}
	}
	token := csrf(t, c, b.Srv.URL+"/jobs")
	for _, form := range []url.Values{
		{"csrf": {token}, "action": {"explode"}, "id": {"1"}},
		{"csrf": {token}, "action": {"retry"}, "id": {"x"}},
		{"csrf": {token}, "action": {"retry"}, "id": make([]string, 1001)},
	} {
		if code, body, _ := post(t, c, b.Srv.URL+"/jobs/action", form); code != http.StatusBadRequest {
			t.Errorf("POST %v: %d, want 400:\n%s", form, code, body)
		}
	}
	if code, _, _ := post(t, c, b.Srv.URL+"/dead/replay", url.Values{"csrf": {token}, "kind": {"mail"}, "error": {"x"}, "rate": {"100000"}}); code != http.StatusBadRequest {
		t.Errorf("replay above the rate cap: %d, want 400", code)
	}
	if code, _, _ := post(t, c, b.Srv.URL+"/queues/action", url.Values{"csrf": {token}, "action": {"pause"}, "queue": {"bad queue"}}); code != http.StatusBadRequest {
		t.Errorf("pause of an invalid queue name: %d, want 400", code)
	}
	if code, _, _ := get(t, c, b.Srv.URL+"/queues/action"); code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
		t.Errorf("GET of an action: %d, want 405 or 404", code)
	}
}

// A POST without the CSRF token, with a wrong one, or from another origin
// changes nothing; with it, the action runs.
func TestCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/")
	paused := func() bool {
		qs, err := b.Ops.Queues().Paused(b.Ctx, b.Pool)
		if err != nil {
			t.Fatal(err)
		}
		return len(qs) > 0
	}
	form := url.Values{"queue": {"mail"}, "action": {"pause"}}
	if code, body, _ := post(t, c, b.Srv.URL+"/queues/action", form); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("POST without token: %d\n%s", code, body)
	}
	form.Set("csrf", strings.Repeat("0", 64))
	if code, _, _ := post(t, c, b.Srv.URL+"/queues/action", form); code != http.StatusForbidden {
		t.Errorf("POST with a wrong token: %d", code)
	}
	// The right token from a client without the cookie (another site's form).
	form.Set("csrf", token)
	if code, _, _ := post(t, client(t), b.Srv.URL+"/queues/action", form); code != http.StatusForbidden {
		t.Errorf("POST without the cookie: %d", code)
	}
	if code, _, _ := post(t, c, b.Srv.URL+"/queues/action", form, "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d", code)
	}
	if paused() {
		t.Fatal("a refused POST paused the queue")
	}
	code, _, h := post(t, c, b.Srv.URL+"/queues/action", form)
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "queue+mail%3A+paused") || !paused() {
		t.Errorf("POST with token: %d %q, paused %v", code, h.Get("Location"), paused())
	}
}

// Read-only mode shows no action and refuses every POST.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ReadOnly: true})
	c := client(t)
	for _, path := range []string{"/", "/jobs", fmt.Sprintf("/jobs/%d", b.Dead), "/dead", "/schedules", "/tasks"} {
		code, body, _ := get(t, c, b.Srv.URL+path)
		if code != http.StatusOK || strings.Contains(body, `method="post"`) || strings.Contains(body, "<button") && !strings.Contains(path, "jobs") {
			t.Errorf("read-only GET %s: %d, shows actions:\n%s", path, code, body)
		}
	}
	for _, path := range []string{"/jobs/action", "/jobs/matching", "/queues/action", "/dead/replay", "/dead/purge", "/dead/discard", "/schedules/action", "/tasks/stop"} {
		if code, _, _ := post(t, c, b.Srv.URL+path, url.Values{"action": {"delete"}, "id": {fmt.Sprint(b.Dead)}}); code != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d, want 403", path, code)
		}
	}
	if _, err := b.Ops.Jobs().Get(b.Ctx, b.Pool, b.Dead, false); err != nil {
		t.Errorf("read-only: the dead job is gone: %v", err)
	}
}

// With a token configured, every request needs it.
func TestToken(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{Token: "s3cret-token"})
	c := client(t)
	if code, body, h := get(t, c, b.Srv.URL+"/"); code != http.StatusUnauthorized || !strings.Contains(body, "needs its token") || h.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := get(t, c, b.Srv.URL+"/?token=wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code, _, _ := get(t, c, b.Srv.URL+"/assets/app.js"); code != http.StatusUnauthorized {
		t.Errorf("asset without token: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, b.Srv.URL+"/jobs", nil)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	if resp, err := client(t).Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("bearer token: %v %v", resp.StatusCode, err)
	}
	code, _, h := get(t, c, b.Srv.URL+"/jobs?state=dead&token=s3cret-token")
	if code != http.StatusSeeOther || h.Get("Location") != "/jobs?state=dead" {
		t.Errorf("?token=: %d to %q, want 303 to the page without it", code, h.Get("Location"))
	}
	if code, _, _ := get(t, c, b.Srv.URL+"/jobs?state=dead"); code != http.StatusOK {
		t.Errorf("after ?token= the cookie lets the browser in: %d", code)
	}
	// A POST needs the token too, CSRF or not.
	if code, _, _ := post(t, client(t), b.Srv.URL+"/queues/action", url.Values{"queue": {"mail"}, "action": {"pause"}}); code != http.StatusUnauthorized {
		t.Errorf("POST without token: %d", code)
	}
}

// A running job is never cancelled or deleted under its worker; other jobs
// are, in one bulk action, and the page says which were refused.
func TestBulkActionsSpareRunningJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/jobs")
	// A confirmation carrying the running job too (the page would not:
	// the operation's own guard refuses it).
	form := url.Values{"csrf": {token}, "action": {"delete"}, "return": {"/jobs"}, "confirm": {"1"}, "count": {"3"},
		"id": {fmt.Sprint(b.Ready), fmt.Sprint(b.Running), fmt.Sprint(b.Dead)}}
	code, _, h := post(t, c, b.Srv.URL+"/jobs/action", form)
	loc, _ := url.Parse(h.Get("Location"))
	msg := loc.Query().Get("msg")
	if code != http.StatusSeeOther || msg != fmt.Sprintf("deleted 2 jobs; not deleted: 1 running (id %d)", b.Running) {
		t.Errorf("bulk delete: %d %q", code, msg)
	}
	if j, err := b.Ops.Jobs().Get(b.Ctx, b.Pool, b.Running, false); err != nil || j.State != admin.StateRunning {
		t.Errorf("running job after bulk delete: %+v %v", j, err)
	}
	for _, id := range []int64{b.Ready, b.Dead} {
		if _, err := b.Ops.Jobs().Get(b.Ctx, b.Pool, id, false); !errors.Is(err, admin.ErrJobNotFound) {
			t.Errorf("job %d not deleted: %v", id, err)
		}
	}
	if _, body, _ := get(t, c, b.Srv.URL+loc.String()); !strings.Contains(body, fmt.Sprintf("not deleted: 1 running (id %d)", b.Running)) {
		t.Errorf("the page does not show the refusal")
	}
}

// send makes a request to u with the Host header host (empty: u's own),
// a form body when form is not nil, and header name/value pairs.
func send(t *testing.T, c *http.Client, method, u, host string, form url.Values, header ...string) (int, string, *http.Response) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

// Without a token, the dashboard answers only requests addressed to a
// loopback name: a page on another name resolved to this machine (DNS
// rebinding) reads nothing and changes nothing.
func TestHostCheckWithoutToken(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	_, port, _ := net.SplitHostPort(b.Srv.Listener.Addr().String())
	for _, host := range []string{"localhost", "localhost:8080", "LocalHost:" + port, "127.0.0.1:" + port, "127.9.8.7", "[::1]:8080", "[::1]", "localhost.:8080"} {
		if code, body, _ := send(t, c, http.MethodGet, b.Srv.URL+"/jobs", host, nil); code != http.StatusOK {
			t.Errorf("GET with Host %q: %d, want 200:\n%.200s", host, code, body)
		}
	}
	token := csrf(t, c, b.Srv.URL+"/")
	for _, host := range []string{"evil.example:8080", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example:" + port, "10.0.0.1:8080", "[fe80::1]:8080", "[::ffff:10.0.0.1]", "0.0.0.0:" + port} {
		code, body, resp := send(t, c, http.MethodGet, b.Srv.URL+"/", host, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "not served on this host") || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET with Host %q: %d %q, want 403 with a plain message:\n%.200s", host, code, resp.Header.Get("Content-Type"), body)
		}
		form := url.Values{"csrf": {token}, "queue": {"mail"}, "action": {"pause"}}
		if code, body, _ := send(t, c, http.MethodPost, b.Srv.URL+"/queues/action", host, form,
			"Origin", "http://"+host, "Cookie", "docket_dashboard_csrf="+token); code != http.StatusForbidden {
			t.Errorf("POST with Host %q: %d, want 403:\n%.200s", host, code, body)
		}
	}
	if qs, err := b.Ops.Queues().Paused(b.Ctx, b.Pool); err != nil || len(qs) != 0 {
		t.Errorf("paused queues after refused POSTs: %v %v", qs, err)
	}
}

// The attack itself: a page on evil.example, rebound to 127.0.0.1, reads a
// page for its CSRF token (the browser keeps the cookie for evil.example)
// and posts it back with its own, matching, Origin. Both requests are
// refused and the queue is not paused.
func TestRebindingCannotAct(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	const evil = "evil.example:8080"
	code, body, _ := send(t, client(t), http.MethodGet, b.Srv.URL+"/", evil, nil)
	token := ""
	if m := csrfInput.FindStringSubmatch(body); m != nil {
		token = m[1]
	}
	if code != http.StatusForbidden || token != "" {
		t.Errorf("GET through the rebound name: %d, token %q; want 403 and no token", code, token)
	}
	if token == "" {
		// Refused as it should be: go on with a valid token anyway, as if
		// the page had got one, to show the POST is refused on its own.
		token = csrf(t, client(t), b.Srv.URL+"/")
	}
	form := url.Values{"csrf": {token}, "queue": {"mail"}, "action": {"pause"}}
	if code, body, _ := send(t, client(t), http.MethodPost, b.Srv.URL+"/queues/action", evil, form,
		"Origin", "http://"+evil, "Cookie", "docket_dashboard_csrf="+token); code != http.StatusForbidden {
		t.Errorf("rebound POST: %d, want 403:\n%.200s", code, body)
	}
	qs, err := b.Ops.Queues().Paused(b.Ctx, b.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 0 {
		t.Errorf("the rebound POST paused %v", qs)
	}
}

// Config.AllowedHosts adds the names a dashboard is reached by: any port,
// any case, nothing else. With a token the list is checked when set.
func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{AllowedHosts: []string{"Dash.Internal", "10.1.2.3", "[fd00::7]", "ops.example.com."}})
	c := client(t)
	for host, want := range map[string]int{
		"dash.internal:8443":         http.StatusOK,
		"DASH.INTERNAL":              http.StatusOK,
		"10.1.2.3:80":                http.StatusOK,
		"[fd00::7]:8080":             http.StatusOK,
		"ops.example.com":            http.StatusOK,
		"ops.example.com.:443":       http.StatusOK,
		"localhost:8080":             http.StatusOK,
		"evil.example":               http.StatusForbidden,
		"dash.internal.evil.example": http.StatusForbidden,
		"internal":                   http.StatusForbidden,
		"10.1.2.4":                   http.StatusForbidden,
		"[fd00::8]:8080":             http.StatusForbidden,
	} {
		if code, body, _ := send(t, c, http.MethodGet, b.Srv.URL+"/jobs", host, nil); code != want {
			t.Errorf("GET with Host %q: %d, want %d:\n%.200s", host, code, want, body)
		}
	}

	bearer := []string{"Authorization", "Bearer s3cret-token"}
	listed := setup(t, dashboard.Config{Token: "s3cret-token", AllowedHosts: []string{"dash.internal"}})
	if code, _, _ := send(t, c, http.MethodGet, listed.Srv.URL+"/jobs", "dash.internal:8080", nil, bearer...); code != http.StatusOK {
		t.Errorf("token and AllowedHosts, listed host: %d, want 200", code)
	}
	if code, _, _ := send(t, c, http.MethodGet, listed.Srv.URL+"/jobs", "evil.example", nil, bearer...); code != http.StatusForbidden {
		t.Errorf("token and AllowedHosts, other host with the token: %d, want 403", code)
	}
	// A token alone keeps out a rebound page (it cannot know the token),
	// so any Host is answered, as before.
	tokenOnly := setup(t, dashboard.Config{Token: "s3cret-token"})
	if code, _, _ := send(t, c, http.MethodGet, tokenOnly.Srv.URL+"/jobs", "dash.example.com", nil, bearer...); code != http.StatusOK {
		t.Errorf("token, no AllowedHosts, any host with the token: %d, want 200", code)
	}
	if code, _, _ := send(t, c, http.MethodGet, tokenOnly.Srv.URL+"/jobs", "evil.example", nil); code != http.StatusUnauthorized {
		t.Errorf("token, no AllowedHosts, no token: %d, want 401", code)
	}
}

// Settings the Host check and the cookie cannot honour are refused.
func TestSecurityConfigRefused(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	for what, cfg := range map[string]dashboard.Config{
		"host with port":      {AllowedHosts: []string{"dash.internal:8080"}},
		"empty host":          {AllowedHosts: []string{""}},
		"URL as host":         {AllowedHosts: []string{"http://dash.internal"}},
		"negative max age":    {TokenMaxAge: -time.Hour},
		"max age under a sec": {TokenMaxAge: 500 * time.Millisecond},
	} {
		if _, err := dashboard.Handler(pool, cfg); err == nil {
			t.Errorf("Handler with %s: no error", what)
		}
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate with %s: no error", what)
		}
	}
}

// tokenCookie opens u?token=… and returns the cookie it sets.
func tokenCookie(t *testing.T, c *http.Client, u string, header ...string) *http.Cookie {
	t.Helper()
	code, _, resp := send(t, c, http.MethodGet, u+"/jobs?token=s3cret-token", "", nil, header...)
	if code != http.StatusSeeOther {
		t.Fatalf("GET ?token=: %d, want 303", code)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "docket_dashboard_token" {
			return ck
		}
	}
	t.Fatalf("GET ?token= sets no token cookie: %v", resp.Header["Set-Cookie"])
	return nil
}

// Refused requests are logged with where they came from and the Host or
// Origin that caused them; every action with who did it and from where.
func TestRefusalsAndActionsLogged(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	send(t, c, http.MethodGet, b.Srv.URL+"/", "evil.example:8080", nil)
	token := csrf(t, c, b.Srv.URL+"/")
	form := url.Values{"csrf": {token}, "queue": {"mail"}, "action": {"pause"}}
	send(t, c, http.MethodPost, b.Srv.URL+"/queues/action", "", form, "Origin", "https://other.example")
	if code, _, _ := send(t, c, http.MethodPost, b.Srv.URL+"/queues/action", "", form, "X-Forwarded-For", "203.0.113.7"); code != http.StatusSeeOther {
		t.Fatalf("pause: %d, want 303", code)
	}
	lines := logLines(b.Log.String())
	remote := "remote=127.0.0.1:"
	if l := lineWith(lines, "refused", "status=403", `host=evil.example:8080`); l == "" || !strings.Contains(l, remote) {
		t.Errorf("no refusal line with the host and remote address:\n%s", b.Log)
	}
	if l := lineWith(lines, "refused", "status=403", "origin=https://other.example"); l == "" || !strings.Contains(l, remote) {
		t.Errorf("no refusal line with the origin and remote address:\n%s", b.Log)
	}
	l := lineWith(lines, "queue pause", "queue=mail")
	if !strings.Contains(l, "actor=local") || !strings.Contains(l, remote) {
		t.Errorf("action line without actor and remote address: %q\n%s", l, b.Log)
	}
	if strings.Contains(b.Log.String(), "203.0.113.7") {
		t.Errorf("X-Forwarded-For logged without a trusted proxy:\n%s", b.Log)
	}

	tb := setup(t, dashboard.Config{Token: "s3cret-token"})
	tc := client(t)
	send(t, tc, http.MethodGet, tb.Srv.URL+"/jobs", "", nil)
	tokenCookie(t, tc, tb.Srv.URL)
	token = csrf(t, tc, tb.Srv.URL+"/")
	form.Set("csrf", token)
	if code, _, _ := send(t, tc, http.MethodPost, tb.Srv.URL+"/queues/action", "", form); code != http.StatusSeeOther {
		t.Fatalf("pause with token: %d, want 303", code)
	}
	lines = logLines(tb.Log.String())
	if l := lineWith(lines, "refused", "status=401"); l == "" || !strings.Contains(l, remote) {
		t.Errorf("no 401 line with the remote address:\n%s", tb.Log)
	}
	if l := lineWith(lines, "queue pause", "actor=token"); l == "" || !strings.Contains(l, remote) {
		t.Errorf("action with the token: no line with actor=token and the remote address:\n%s", tb.Log)
	}
	if strings.Contains(tb.Log.String(), "s3cret-token") {
		t.Errorf("the token was logged:\n%s", tb.Log)
	}
}

func logLines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// lineWith returns the first line holding every part, or "".
func lineWith(lines []string, parts ...string) string {
next:
	for _, l := range lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l
	}
	return ""
}

// Behind a trusted proxy, the X-Forwarded-For it sends is logged with
// refusals and actions.
func TestTrustedProxyLogs(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{TrustProxyHeaders: true})
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/")
	form := url.Values{"csrf": {token}, "queue": {"mail"}, "action": {"pause"}}
	if code, _, _ := send(t, c, http.MethodPost, b.Srv.URL+"/queues/action", "", form, "X-Forwarded-For", "203.0.113.7, 10.0.0.2"); code != http.StatusSeeOther {
		t.Fatalf("pause: %d, want 303", code)
	}
	send(t, client(t), http.MethodGet, b.Srv.URL+"/", "evil.example", nil, "X-Forwarded-For", "198.51.100.9")
	lines := logLines(b.Log.String())
	if l := lineWith(lines, "queue pause", "actor=local", "remote=127.0.0.1:", `forwarded_for="203.0.113.7, 10.0.0.2"`); l == "" {
		t.Errorf("no action line with the forwarded address:\n%s", b.Log)
	}
	if l := lineWith(lines, "refused", "status=403", "remote=127.0.0.1:", "forwarded_for=198.51.100.9"); l == "" {
		t.Errorf("no refusal line with the forwarded address:\n%s", b.Log)
	}
}

// The bearer scheme's name is case-insensitive (RFC 7235).
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{Token: "s3cret-token"})
	for auth, want := range map[string]int{
		"Bearer s3cret-token":   http.StatusOK,
		"bearer s3cret-token":   http.StatusOK,
		"BEARER s3cret-token":   http.StatusOK,
		"bEaReR   s3cret-token": http.StatusOK,
		"Basic s3cret-token":    http.StatusUnauthorized,
		"Bearers3cret-token":    http.StatusUnauthorized,
		"bearer wrong":          http.StatusUnauthorized,
		"bearer":                http.StatusUnauthorized,
	} {
		if code, _, _ := send(t, client(t), http.MethodGet, b.Srv.URL+"/jobs", "", nil, "Authorization", auth); code != want {
			t.Errorf("Authorization %q: %d, want %d", auth, code, want)
		}
	}
}

// The token cookie expires (12 hours by default) and is Secure when the
// request came over TLS; a client's X-Forwarded-Proto alone does not make
// it so.
func TestTokenCookieExpiresAndSecure(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{Token: "s3cret-token"})
	ck := tokenCookie(t, client(t), b.Srv.URL)
	if ck.MaxAge != 12*60*60 || ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("plain HTTP: cookie %s, want Max-Age=43200, HttpOnly, SameSite=Strict, not Secure", ck)
	}
	if ck := tokenCookie(t, client(t), b.Srv.URL, "X-Forwarded-Proto", "https"); ck.Secure {
		t.Errorf("X-Forwarded-Proto from an untrusted client made the cookie Secure: %s", ck)
	}
	tlsSrv := httptest.NewTLSServer(b.Handler)
	defer tlsSrv.Close()
	tc := tlsSrv.Client()
	tc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if ck := tokenCookie(t, tc, tlsSrv.URL); ck.MaxAge != 12*60*60 || !ck.Secure {
		t.Errorf("TLS: cookie %s, want Max-Age=43200 and Secure", ck)
	}
}

// Behind a trusted proxy, its X-Forwarded-Proto makes the cookies Secure;
// TokenMaxAge sets the token cookie's life.
func TestTrustedProxyCookies(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{Token: "s3cret-token", TrustProxyHeaders: true, TokenMaxAge: time.Hour})
	if ck := tokenCookie(t, client(t), b.Srv.URL, "X-Forwarded-Proto", "https"); !ck.Secure || ck.MaxAge != 3600 {
		t.Errorf("trusted X-Forwarded-Proto https: cookie %s, want Secure and Max-Age=3600", ck)
	}
	if ck := tokenCookie(t, client(t), b.Srv.URL, "X-Forwarded-Proto", "http"); ck.Secure {
		t.Errorf("trusted X-Forwarded-Proto http: cookie %s is Secure", ck)
	}
	c := client(t)
	tokenCookie(t, c, b.Srv.URL)
	code, _, resp := send(t, c, http.MethodGet, b.Srv.URL+"/", "", nil, "X-Forwarded-Proto", "https")
	var csrfCk *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "docket_dashboard_csrf" {
			csrfCk = ck
		}
	}
	if code != http.StatusOK || csrfCk == nil || !csrfCk.Secure {
		t.Errorf("trusted X-Forwarded-Proto https: %d, CSRF cookie %v, want Secure", code, csrfCk)
	}
}
