package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
)

// confirmForm reads the hidden fields of a confirmation page's form.
var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

func confirmForm(t *testing.T, body string) url.Values {
	t.Helper()
	i := strings.Index(body, `id="confirm-form"`)
	if i < 0 {
		t.Fatalf("no confirmation form:\n%s", body)
	}
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(body[i:], -1) {
		form.Add(m[1], htmlUnescape(m[2]))
	}
	return form
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">", "&#43;", "+").Replace(s)
}

var confirmCount = regexp.MustCompile(`id="confirm-count">([0-9,]+)<`)

// Every destructive action first answers with a confirmation page that
// counts what it would touch, and changes nothing; only the confirmation's
// own POST acts, on at most that many rows.
func TestConfirmBeforeDestroying(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/jobs")
	exists := func(id int64) bool {
		s, err := b.Ops.Jobs().States(b.Ctx, b.Pool, []int64{id})
		if err != nil {
			t.Fatal(err)
		}
		return s[id] != ""
	}
	dead := func() int64 {
		n, err := b.Ops.DeadLetters().Count(b.Ctx, b.Pool, admin.DeadFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	preview := func(path string, form url.Values, wantCount string) url.Values {
		t.Helper()
		form.Set("csrf", token)
		code, body, _ := post(t, c, b.Srv.URL+path, form)
		m := confirmCount.FindStringSubmatch(body)
		if code != http.StatusOK || m == nil || m[1] != wantCount {
			t.Fatalf("POST %s %v without confirm: %d, want a confirmation of %s:\n%s", path, form, code, wantCount, body)
		}
		return confirmForm(t, body)
	}

	// Delete of a selection: the running job is not counted.
	ids := []string{fmt.Sprint(b.Ready), fmt.Sprint(b.Running), fmt.Sprint(b.Dead)}
	form := preview("/jobs/action", url.Values{"action": {"delete"}, "return": {"/jobs"}, "id": ids}, "2")
	if !exists(b.Ready) || !exists(b.Dead) {
		t.Fatalf("the preview deleted jobs")
	}
	// Cancel, purge, group replay and discard: previews change nothing.
	// Cancel counts the running job (its worker is asked to stop it), not
	// the dead one.
	preview("/jobs/action", url.Values{"action": {"cancel"}, "id": ids}, "2")
	preview("/dead/purge", url.Values{"older_than": {"0s"}}, "1")
	group := url.Values{"kind": {"mail"}, "error": {"smtp: 550 mailbox unavailable"}}
	preview("/dead/discard", group, "1")
	group.Set("rate", "10")
	preview("/dead/replay", group, "1")
	if !exists(b.Ready) || dead() != 1 {
		t.Fatalf("previews changed jobs: ready %v, %d dead", exists(b.Ready), dead())
	}

	// The confirmation acts.
	code, _, h := post(t, c, b.Srv.URL+"/jobs/action", form)
	loc, _ := url.Parse(h.Get("Location"))
	if msg := loc.Query().Get("msg"); code != http.StatusSeeOther || !strings.Contains(msg, "deleted 2 jobs") {
		t.Errorf("confirmed delete: %d %q", code, msg)
	}
	if exists(b.Ready) || exists(b.Dead) || !exists(b.Running) {
		t.Errorf("after the confirmed delete: ready %v dead %v running %v", exists(b.Ready), exists(b.Dead), exists(b.Running))
	}
}

// "Apply to all matching" counts every page of the filter, acts on no job
// enqueued after the count, and refuses filters that match every live job
// or jobs it cannot act on.
func TestApplyToAllMatching(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/jobs")
	var n int
	b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM "`+b.Schema+`".docket_jobs WHERE queue = 'bounce'`).Scan(&n)
	code, body, _ := post(t, c, b.Srv.URL+"/jobs/matching", url.Values{"csrf": {token}, "action": {"cancel"}, "queue": {"bounce"}, "return": {"/jobs?queue=bounce"}})
	m := confirmCount.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil || m[1] != "0" {
		t.Fatalf("cancel all of bounce (only a running job): %d %v, want a preview of 0:\n%s", code, m, body)
	}
	code, body, _ = post(t, c, b.Srv.URL+"/jobs/matching", url.Values{"csrf": {token}, "action": {"cancel"}, "queue": {"mail"}, "return": {"/jobs?queue=mail"}})
	if m := confirmCount.FindStringSubmatch(body); code != http.StatusOK || m == nil || m[1] != "1" {
		t.Fatalf("cancel all of mail: %d, want a preview of 1:\n%s", code, body)
	}
	form := confirmForm(t, body)
	late := enqueueMail(t, b, "mail")
	code, _, h := post(t, c, b.Srv.URL+"/jobs/matching", form)
	loc, _ := url.Parse(h.Get("Location"))
	if msg := loc.Query().Get("msg"); code != http.StatusSeeOther || msg != "cancelled 1 job of the 1 matching" || loc.Path != "/jobs" || loc.Query().Get("queue") != "mail" {
		t.Errorf("confirmed: %d %q", code, h.Get("Location"))
	}
	s, _ := b.Ops.Jobs().States(b.Ctx, b.Pool, []int64{b.Ready, late})
	if s[b.Ready] != admin.StateDead || s[late] != admin.StateReady {
		t.Errorf("after cancel all: %v, want the counted job dead and the later one ready", s)
	}
	for _, form := range []url.Values{
		{"action": {"delete"}},                                                      // every live job
		{"action": {"delete"}, "state": {"completed"}},                              // history
		{"action": {"cancel"}, "state": {"running"}},                                // workers' jobs
		{"action": {"cancel"}, "state": {"dead"}},                                   // already dead
		{"action": {"explode"}, "queue": {"mail"}},                                  // unknown action
		{"action": {"delete"}, "queue": {"mail"}, "confirm": {"1"}, "count": {"1"}}, // no bound
	} {
		form.Set("csrf", token)
		if code, body, _ := post(t, c, b.Srv.URL+"/jobs/matching", form); code != http.StatusBadRequest {
			t.Errorf("POST %v: %d, want 400:\n%s", form, code, body)
		}
	}
	if s, _ := b.Ops.Jobs().States(b.Ctx, b.Pool, []int64{late, b.Running}); len(s) != 2 {
		t.Errorf("refused filters changed jobs: %v", s)
	}
}

// The jobs page offers "all matching" only for filters it can act on.
func TestApplyToAllOffered(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	for path, want := range map[string]bool{
		"/jobs": false, "/jobs?state=running": false, "/jobs?state=completed": false,
		"/jobs?queue=mail": true, "/jobs?state=dead": true, "/jobs?state=ready": true,
	} {
		if _, body, _ := get(t, c, b.Srv.URL+path); strings.Contains(body, `id="matching"`) != want {
			t.Errorf("GET %s: offers apply to all matching: %v, want %v", path, !want, want)
		}
	}
}
