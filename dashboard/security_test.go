package dashboard_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/outbox"
)

// Every page answers 200 with the strict policy, shows what the schema
// holds, and never shows the payload.
func TestPages(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	for path, want := range map[string]string{
		"/":                                `data-queue="bounce"`,
		"/jobs":                            fmt.Sprintf(`data-id="%d"`, b.running),
		"/jobs?state=dead&error=MAILBOX":   "smtp: 550 mailbox unavailable",
		fmt.Sprintf("/jobs/%d", b.running): "Lease holder",
		fmt.Sprintf("/jobs/%d", b.dead):    "Replay",
		"/dead":                            "smtp: 550 mailbox unavailable",
		"/schedules":                       "No schedules registered",
		"/workers":                         "No worker process",
		"/?live=1":                         `id="live"`,
		"/throughput":                      `"completed"`,
		"/assets/htmx.min.js":              "htmx",
	} {
		code, body, h := get(t, c, b.srv.URL+path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%s", path, code, want, body)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s shows the payload", path)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
			t.Errorf("GET %s has inline script or style", path)
		}
	}
}

func TestPayloadShownOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ShowPayloads: true})
	if _, body, _ := get(t, client(t), fmt.Sprintf("%s/jobs/%d", b.srv.URL, b.ready)); !strings.Contains(body, secret) {
		t.Errorf("ShowPayloads: the job page hides the payload:\n%s", body)
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
		code, body, _ := get(t, c, b.srv.URL+path)
		if code != want.code || !strings.Contains(body, want.text) {
			t.Errorf("GET %s: %d, want %d with %q:\n%s", path, code, want.code, want.text, body)
		}
		if strings.Contains(body, "goroutine") || strings.Contains(body, ".go:") {
			t.Errorf("GET %s shows a stack trace", path)
		}
	}
	token := csrf(t, c, b.srv.URL+"/jobs")
	for _, form := range []url.Values{
		{"csrf": {token}, "action": {"explode"}, "id": {"1"}},
		{"csrf": {token}, "action": {"retry"}, "id": {"x"}},
		{"csrf": {token}, "action": {"retry"}, "id": make([]string, 1001)},
	} {
		if code, body, _ := post(t, c, b.srv.URL+"/jobs/action", form); code != http.StatusBadRequest {
			t.Errorf("POST %v: %d, want 400:\n%s", form, code, body)
		}
	}
	if code, _, _ := post(t, c, b.srv.URL+"/dead/replay", url.Values{"csrf": {token}, "kind": {"mail"}, "error": {"x"}, "rate": {"100000"}}); code != http.StatusBadRequest {
		t.Errorf("replay above the rate cap: %d, want 400", code)
	}
	if code, _, _ := post(t, c, b.srv.URL+"/queues/action", url.Values{"csrf": {token}, "action": {"pause"}, "queue": {"bad queue"}}); code != http.StatusBadRequest {
		t.Errorf("pause of an invalid queue name: %d, want 400", code)
	}
	if code, _, _ := get(t, c, b.srv.URL+"/queues/action"); code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
		t.Errorf("GET of an action: %d, want 405 or 404", code)
	}
}

// A POST without the CSRF token, with a wrong one, or from another origin
// changes nothing; with it, the action runs.
func TestCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.srv.URL+"/")
	paused := func() bool {
		qs, err := b.ob.PausedQueues(b.ctx, b.pool)
		if err != nil {
			t.Fatal(err)
		}
		return len(qs) > 0
	}
	form := url.Values{"queue": {"mail"}, "action": {"pause"}}
	if code, body, _ := post(t, c, b.srv.URL+"/queues/action", form); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("POST without token: %d\n%s", code, body)
	}
	form.Set("csrf", strings.Repeat("0", 64))
	if code, _, _ := post(t, c, b.srv.URL+"/queues/action", form); code != http.StatusForbidden {
		t.Errorf("POST with a wrong token: %d", code)
	}
	// The right token from a client without the cookie (another site's form).
	form.Set("csrf", token)
	if code, _, _ := post(t, client(t), b.srv.URL+"/queues/action", form); code != http.StatusForbidden {
		t.Errorf("POST without the cookie: %d", code)
	}
	if code, _, _ := post(t, c, b.srv.URL+"/queues/action", form, "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d", code)
	}
	if paused() {
		t.Fatal("a refused POST paused the queue")
	}
	code, _, h := post(t, c, b.srv.URL+"/queues/action", form)
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "queue+mail%3A+paused") || !paused() {
		t.Errorf("POST with token: %d %q, paused %v", code, h.Get("Location"), paused())
	}
}

// Read-only mode shows no action and refuses every POST.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ReadOnly: true})
	c := client(t)
	for _, path := range []string{"/", "/jobs", fmt.Sprintf("/jobs/%d", b.dead), "/dead", "/schedules"} {
		code, body, _ := get(t, c, b.srv.URL+path)
		if code != http.StatusOK || strings.Contains(body, `method="post"`) || strings.Contains(body, "<button") && !strings.Contains(path, "jobs") {
			t.Errorf("read-only GET %s: %d, shows actions:\n%s", path, code, body)
		}
	}
	for _, path := range []string{"/jobs/action", "/queues/action", "/dead/replay", "/dead/purge", "/schedules/action"} {
		if code, _, _ := post(t, c, b.srv.URL+path, url.Values{"action": {"delete"}, "id": {fmt.Sprint(b.dead)}}); code != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d, want 403", path, code)
		}
	}
	if _, err := b.ob.JobByID(b.ctx, b.pool, b.dead, false); err != nil {
		t.Errorf("read-only: the dead job is gone: %v", err)
	}
}

// With a token configured, every request needs it.
func TestToken(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{Token: "s3cret-token"})
	c := client(t)
	if code, body, h := get(t, c, b.srv.URL+"/"); code != http.StatusUnauthorized || !strings.Contains(body, "needs its token") || h.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := get(t, c, b.srv.URL+"/?token=wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code, _, _ := get(t, c, b.srv.URL+"/assets/app.js"); code != http.StatusUnauthorized {
		t.Errorf("asset without token: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/jobs", nil)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	if resp, err := client(t).Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("bearer token: %v %v", resp.StatusCode, err)
	}
	code, _, h := get(t, c, b.srv.URL+"/jobs?state=dead&token=s3cret-token")
	if code != http.StatusSeeOther || h.Get("Location") != "/jobs?state=dead" {
		t.Errorf("?token=: %d to %q, want 303 to the page without it", code, h.Get("Location"))
	}
	if code, _, _ := get(t, c, b.srv.URL+"/jobs?state=dead"); code != http.StatusOK {
		t.Errorf("after ?token= the cookie lets the browser in: %d", code)
	}
	// A POST needs the token too, CSRF or not.
	if code, _, _ := post(t, client(t), b.srv.URL+"/queues/action", url.Values{"queue": {"mail"}, "action": {"pause"}}); code != http.StatusUnauthorized {
		t.Errorf("POST without token: %d", code)
	}
}

// A running job is never cancelled or deleted under its worker; other jobs
// are, in one bulk action, and the page says which were refused.
func TestBulkActionsSpareRunningJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.srv.URL+"/jobs")
	form := url.Values{"csrf": {token}, "action": {"delete"}, "return": {"/jobs"},
		"id": {fmt.Sprint(b.ready), fmt.Sprint(b.running), fmt.Sprint(b.dead)}}
	code, _, h := post(t, c, b.srv.URL+"/jobs/action", form)
	loc, _ := url.Parse(h.Get("Location"))
	msg := loc.Query().Get("msg")
	if code != http.StatusSeeOther || !strings.Contains(msg, "delete: 2 jobs") || !strings.Contains(msg, fmt.Sprintf("job %d: job is running", b.running)) {
		t.Errorf("bulk delete: %d %q", code, msg)
	}
	if j, err := b.ob.JobByID(b.ctx, b.pool, b.running, false); err != nil || j.State != outbox.StateRunning {
		t.Errorf("running job after bulk delete: %+v %v", j, err)
	}
	for _, id := range []int64{b.ready, b.dead} {
		if _, err := b.ob.JobByID(b.ctx, b.pool, id, false); !errors.Is(err, outbox.ErrJobNotFound) {
			t.Errorf("job %d not deleted: %v", id, err)
		}
	}
	if _, body, _ := get(t, c, b.srv.URL+loc.String()); !strings.Contains(body, "job is running") {
		t.Errorf("the page does not show the refusal")
	}
}
