package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobfill"
	"github.com/google/uuid"
)

// The workflows list counts a workflow's steps by state and filters by
// the workflow's state; its page draws every step as a link to its job,
// with the class of its state, links the child workflow both ways, and
// shows the awaited signal and the sent one (its payload hidden).
func TestWorkflowPages(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	wf := b.Workflow(t)
	c := client(t)
	u := b.Srv.URL

	code, body, _ := get(t, c, u+"/workflows")
	row := between(body, fmt.Sprintf(`<tr data-id="%d"`, wf.ID), "</tr>")
	for _, want := range []string{"order 7", ">running<", `data-state="waiting">4<`, `data-state="ready">1<`,
		`data-state="running">1<`, `data-state="dead">2<`, `data-state="completed">1<`, `<td class="n">9</td>`} {
		if code != http.StatusOK || !strings.Contains(row, want) {
			t.Errorf("workflows list: %d, row of workflow %d lacks %q:\n%s", code, wf.ID, want, row)
		}
	}
	child := between(body, fmt.Sprintf(`<tr data-id="%d"`, wf.Child), "</tr>")
	if !strings.Contains(child, fmt.Sprintf(`href="jobs/%d"`, wf.Jobs["spawn"])) || !strings.Contains(child, fmt.Sprintf(`href="workflows/%d"`, wf.ID)) {
		t.Errorf("the child workflow's row does not link its parent step and workflow:\n%s", child)
	}
	_, body, _ = get(t, c, u+"/workflows?state=running")
	if !strings.Contains(body, fmt.Sprintf(`<tr data-id="%d"`, wf.ID)) {
		t.Errorf("state=running does not list workflow %d", wf.ID)
	}
	_, body, _ = get(t, c, u+"/workflows?state=succeeded")
	if strings.Contains(body, fmt.Sprintf(`<tr data-id="%d"`, wf.ID)) || !strings.Contains(body, "No succeeded workflows.") {
		t.Errorf("state=succeeded lists the running workflow %d:\n%s", wf.ID, body)
	}

	code, body, _ = get(t, c, fmt.Sprintf("%s/workflows/%d", u, wf.ID))
	if code != http.StatusOK {
		t.Fatalf("workflow page: %d\n%s", code, body)
	}
	svg := between(body, `<svg id="wf-graph"`, "</svg>")
	want := map[string]string{"fetch": "completed", "charge": "running", "pack": "ready", "ship": "waiting",
		"approve": "waiting", "invoice": "waiting", "audit": "dead", "report": "dead", "spawn": "waiting"}
	for name, state := range want {
		node := fmt.Sprintf(`<a href="jobs/%d" class="wf-step" data-job="%d" data-state="%s">`, wf.Jobs[name], wf.Jobs[name], state)
		if !strings.Contains(svg, node) {
			t.Errorf("graph: no node %s of state %s: %s", name, state, node)
		}
	}
	for _, want := range []string{`class="wf-node wf-dead"`, `class="wf-node wf-completed"`, `class="wf-edge"`,
		fmt.Sprintf("child %d", wf.Child)} {
		if !strings.Contains(svg, want) {
			t.Errorf("graph lacks %q", want)
		}
	}
	if n := strings.Count(svg, `<path class="wf-edge`); n != 8 {
		t.Errorf("graph has %d edges, want the 8 dependencies", n)
	}
	for _, want := range []string{fmt.Sprintf(`<a class="child" href="workflows/%d">`, wf.Child), "signal approval until", "signal note (received)",
		`<tr data-signal="note">`, `<span class="note">hidden</span>`, "wf-cancel"} {
		if !strings.Contains(body, want) {
			t.Errorf("workflow page lacks %q", want)
		}
	}
	if strings.Contains(body, secret) {
		t.Errorf("workflow page shows a signal's payload with payloads off")
	}
	_, body, _ = get(t, c, fmt.Sprintf("%s/workflows/%d", u, wf.Child))
	if !strings.Contains(body, fmt.Sprintf(`<a href="jobs/%d">step %d</a> of <a href="workflows/%d">`, wf.Jobs["spawn"], wf.Jobs["spawn"], wf.ID)) ||
		!strings.Contains(body, fmt.Sprintf(`data-job="%d" data-state="scheduled"`, wf.Leaf)) {
		t.Errorf("child workflow page does not link its parent step, or lacks its scheduled leaf:\n%s", body)
	}

	// The job pages link to their workflow, and spawn to its child.
	_, body, _ = get(t, c, fmt.Sprintf("%s/jobs/%d", u, wf.Jobs["spawn"]))
	if !strings.Contains(body, fmt.Sprintf(`<a id="job-workflow" href="workflows/%d">`, wf.ID)) ||
		!strings.Contains(body, fmt.Sprintf(`<a id="job-child-workflow" href="workflows/%d">`, wf.Child)) {
		t.Errorf("spawn's job page does not link its workflow and child:\n%s", body)
	}
	_, body, _ = get(t, c, fmt.Sprintf("%s/jobs/%d", u, wf.Jobs["fetch"]))
	if !strings.Contains(body, fmt.Sprintf(`<a id="job-workflow" href="workflows/%d">`, wf.ID)) {
		t.Errorf("a completed step's job page does not link its workflow")
	}
	_, body, _ = get(t, c, fmt.Sprintf("%s/jobs/%d", u, b.Ready))
	if strings.Contains(body, "job-workflow") {
		t.Errorf("a job outside workflows links to one")
	}
}

// With payloads on, a signal's payload is shown.
func TestWorkflowSignalPayloadShown(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ShowPayloads: true})
	wf := b.Workflow(t)
	_, body, _ := get(t, client(t), fmt.Sprintf("%s/workflows/%d", b.Srv.URL, wf.ID))
	if !strings.Contains(body, `<pre class="signal-payload">`) || !strings.Contains(body, secret) {
		t.Errorf("payloads on: the signal's payload is not shown")
	}
}

// Cancelling a workflow is confirmed: the preview counts its jobs that
// are not running and changes nothing; the confirmation cancels them.
func TestWorkflowCancelConfirmed(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	wf := b.Workflow(t)
	c := client(t)
	page := fmt.Sprintf("%s/workflows/%d", b.Srv.URL, wf.ID)
	token := csrf(t, c, page)
	code, body, _ := post(t, c, b.Srv.URL+"/workflows/cancel", url.Values{"csrf": {token}, "id": {fmt.Sprint(wf.ID)}, "return": {fmt.Sprintf("/workflows/%d", wf.ID)}})
	m := confirmCount.FindStringSubmatch(body)
	// pack, ship, approve, invoice and spawn; charge is running.
	if code != http.StatusOK || m == nil || m[1] != "5" {
		t.Fatalf("cancel preview: %d, want a count of 5:\n%s", code, body)
	}
	if st, _ := b.Ops.Workflows().Status(b.Ctx, b.Pool, wf.ID); st.State != admin.WorkflowRunning {
		t.Fatalf("the preview changed the workflow: %s", st.State)
	}
	form := confirmForm(t, body)
	form.Set("csrf", token)
	code, _, h := post(t, c, b.Srv.URL+"/workflows/cancel", form)
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "cancelled") {
		t.Fatalf("confirmed cancel: %d %s", code, h.Get("Location"))
	}
	st, _ := b.Ops.Workflows().Status(b.Ctx, b.Pool, wf.ID)
	if st.State != admin.WorkflowCancelled || st.Remaining != 1 {
		t.Errorf("after cancel: %+v, want cancelled with the running job left", st)
	}
	// A finished workflow is refused with a message, not an error page.
	_, body, _ = get(t, c, page)
	if strings.Contains(body, "wf-cancel") {
		t.Errorf("a cancelled workflow still offers cancel")
	}
}

// Bad ids and filters get 400 or 404 pages, never a 500.
func TestWorkflowsAndLimitsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	u := b.Srv.URL
	for path, want := range map[string]int{
		"/workflows/abc":                  http.StatusBadRequest,
		"/workflows/0":                    http.StatusBadRequest,
		"/workflows/-3":                   http.StatusBadRequest,
		"/workflows/99999999999999999999": http.StatusBadRequest,
		"/workflows/9223372036854775807":  http.StatusNotFound,
		"/workflows/424242":               http.StatusNotFound,
		"/workflows?state=bogus":          http.StatusBadRequest,
		"/workflows?state='%20OR%201=1":   http.StatusBadRequest,
		"/workflows?before=x":             http.StatusBadRequest,
		"/workflows?before=-1":            http.StatusBadRequest,
		"/workflows?limit=0":              http.StatusBadRequest,
		"/workflows?limit=201":            http.StatusBadRequest,
		"/workflows?before=1":             http.StatusOK,
	} {
		code, body, _ := get(t, c, u+path)
		if code != want || !strings.Contains(body, `class="`) {
			t.Errorf("GET %s: %d, want %d:\n%s", path, code, want, body)
		}
	}
	token := csrf(t, c, u+"/limits")
	for _, p := range []struct {
		path string
		form url.Values
		want int
	}{
		{"/workflows/cancel", url.Values{"id": {"abc"}}, http.StatusBadRequest},
		{"/workflows/cancel", url.Values{}, http.StatusBadRequest},
		{"/workflows/cancel", url.Values{"id": {"424242"}}, http.StatusNotFound},
		{"/workflows/cancel", url.Values{"id": {"424242"}, "confirm": {"1"}, "count": {"1"}}, http.StatusNotFound},
		{"/limits/remove", url.Values{"name": {""}}, http.StatusBadRequest},
		{"/limits/remove", url.Values{"name": {"has space"}}, http.StatusBadRequest},
		{"/limits/remove", url.Values{"name": {"nosuch"}}, http.StatusNotFound},
		{"/limits/remove", url.Values{"name": {"nosuch"}, "confirm": {"1"}, "count": {"2"}}, http.StatusBadRequest},
		{"/limits/set", url.Values{"name": {"x"}, "scope": {"all"}}, http.StatusBadRequest},
		{"/limits/set", url.Values{"name": {"x"}, "scope": {"moon"}, "max_running": {"1"}}, http.StatusBadRequest},
		{"/limits/set", url.Values{"name": {"x"}, "scope": {"kind"}, "scope_value": {"mail"}, "max_running": {"two"}}, http.StatusBadRequest},
		{"/limits/set", url.Values{"name": {"x"}, "scope": {"kind"}, "scope_value": {"mail"}, "rate": {"5"}, "per": {"soon"}}, http.StatusBadRequest},
		{"/limits/set", url.Values{"name": {"x"}, "scope": {"kind"}, "scope_value": {"mail"}, "max_running": {"-1"}}, http.StatusBadRequest},
		{"/limits/set", url.Values{"name": {"x"}, "scope": {"kind"}, "scope_value": {"mail"}, "max_running": {"99999999999"}}, http.StatusBadRequest},
	} {
		p.form.Set("csrf", token)
		code, body, _ := post(t, c, u+p.path, p.form)
		if code != p.want {
			t.Errorf("POST %s %v: %d, want %d:\n%s", p.path, p.form, code, p.want, body)
		}
	}
	if list, err := b.Ops.Limits().List(b.Ctx, b.Pool); err != nil || len(list) != 0 {
		t.Errorf("bad input wrote limits: %v %v", list, err)
	}
}

// The limits page shows each limit's keys with their running jobs and
// tokens; set adds one, remove is confirmed first.
func TestLimitsPage(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	u := b.Srv.URL
	if err := b.Ops.Limits().Set(b.Ctx, b.Pool, admin.Limit{Name: "bounces", Queue: "bounce", MaxRunning: 3}); err != nil {
		t.Fatal(err)
	}
	code, body, _ := get(t, c, u+"/limits")
	row := between(body, `<tbody data-limit="bounces">`, "</tbody>")
	if code != http.StatusOK || !strings.Contains(row, "queue bounce") || !strings.Contains(row, `<td class="n running">1 of 3</td>`) {
		t.Fatalf("limits page: %d, the bounce limit does not show its running job:\n%s", code, body)
	}
	token := csrf(t, c, u+"/limits")
	code, _, h := post(t, c, u+"/limits/set", url.Values{"csrf": {token}, "return": {"/limits"}, "name": {"report-rate"},
		"scope": {"kind"}, "scope_value": {"report"}, "per_tenant": {"1"}, "rate": {"10"}, "per": {"1m"}, "burst": {"4"}})
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "report-rate+set") {
		t.Fatalf("set: %d %s", code, h.Get("Location"))
	}
	list, _ := b.Ops.Limits().List(b.Ctx, b.Pool)
	if len(list) != 2 || list[1] != (admin.Limit{Name: "report-rate", Kind: "report", PerTenant: true, Rate: 10, Per: 60e9, Burst: 4}) {
		t.Fatalf("after set: %+v", list)
	}
	code, body, _ = post(t, c, u+"/limits/remove", url.Values{"csrf": {token}, "return": {"/limits"}, "name": {"bounces"}})
	m := confirmCount.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil || m[1] != "1" || !strings.Contains(body, "1 job running now") {
		t.Fatalf("remove preview: %d\n%s", code, body)
	}
	if list, _ := b.Ops.Limits().List(b.Ctx, b.Pool); len(list) != 2 {
		t.Fatalf("the preview removed a limit: %+v", list)
	}
	form := confirmForm(t, body)
	form.Set("csrf", token)
	if code, _, h := post(t, c, u+"/limits/remove", form); code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "removed") {
		t.Fatalf("confirmed remove: %d %s", code, h.Get("Location"))
	}
	if list, _ := b.Ops.Limits().List(b.Ctx, b.Pool); len(list) != 1 || list[0].Name != "report-rate" {
		t.Errorf("after remove: %+v", list)
	}
}

// Read-only mode shows no action on the new pages and refuses theirs.
func TestWorkflowsAndLimitsReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ReadOnly: true})
	wf := b.Workflow(t)
	if err := b.Ops.Limits().Set(b.Ctx, b.Pool, admin.Limit{Name: "bounces", Queue: "bounce", MaxRunning: 3}); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	for _, path := range []string{"/limits", "/workflows", fmt.Sprintf("/workflows/%d", wf.ID)} {
		code, body, _ := get(t, c, b.Srv.URL+path)
		// The list's filter is a GET form: its button changes nothing.
		body = strings.Replace(body, `<button id="apply">Filter</button>`, "", 1)
		if code != http.StatusOK || strings.Contains(body, `method="post"`) || strings.Contains(body, "<button") {
			t.Errorf("read-only GET %s: %d, shows actions:\n%s", path, code, body)
		}
	}
	for path, form := range map[string]url.Values{
		"/workflows/cancel": {"id": {fmt.Sprint(wf.ID)}, "confirm": {"1"}, "count": {"4"}},
		"/limits/remove":    {"name": {"bounces"}, "confirm": {"1"}, "count": {"1"}},
		"/limits/set":       {"name": {"other"}, "scope": {"all"}, "max_running": {"1"}},
	} {
		if code, _, _ := post(t, c, b.Srv.URL+path, form); code != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d, want 403", path, code)
		}
	}
	if st, _ := b.Ops.Workflows().Status(b.Ctx, b.Pool, wf.ID); st.State != admin.WorkflowRunning {
		t.Errorf("read-only: the workflow is %s", st.State)
	}
	if list, _ := b.Ops.Limits().List(b.Ctx, b.Pool); len(list) != 1 {
		t.Errorf("read-only: limits %+v", list)
	}
}

// between returns the part of s from the first from to the next to after
// it, or "" when from is missing.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j+len(to)]
	}
	return s
}

// Completed steps are found in history through their dependencies; a
// completed step without any is not searched for, and the page says how
// many of the workflow's jobs it shows.
func TestWorkflowCompletedSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.EnqueueWorkflow(b.Ctx, b.Pool, docket.Workflow{Name: "done", Jobs: []docket.WorkflowJob{
		{Ref: "a", Args: mail{To: secret}, Opts: docket.Opts{Queue: "solo"}},
		{Ref: "b", Args: mail{To: secret}, Opts: docket.Opts{Queue: "solo"}, After: docket.After("a")},
		{Ref: "alone", Args: mail{To: secret}, Opts: docket.Opts{Queue: "solo"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(b.Schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	for range 2 { // a and alone, then b
		jobs, err := q.Claim(b.Ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{"solo"}, Kinds: []string{"mail"}, Limit: 5, Lease: time.Hour})
		if err != nil || len(jobs) == 0 {
			t.Fatalf("claim: %d %v", len(jobs), err)
		}
		runs := make([]queue.Run, len(jobs))
		for i, j := range jobs {
			runs[i] = queue.RunOf(j)
		}
		if _, err := q.Complete(b.Ctx, b.Pool, w, runs, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	_, body, _ := get(t, client(t), fmt.Sprintf("%s/workflows/%d", b.Srv.URL, res.ID))
	for _, ref := range []string{"a", "b"} {
		if !strings.Contains(body, fmt.Sprintf(`data-job="%d" data-state="completed"`, res.Jobs[ref])) {
			t.Errorf("completed step %s not drawn", ref)
		}
	}
	if strings.Contains(body, fmt.Sprintf(`data-job="%d"`, res.Jobs["alone"])) || !strings.Contains(body, `id="wf-unseen">2 of 3 steps shown`) {
		t.Errorf("the step without dependencies: not said unseen:\n%s", body)
	}
	if !strings.Contains(body, ">succeeded<") {
		t.Errorf("the workflow is not shown succeeded")
	}
}

// Filtered by a state none of the newest 1,000 workflows has, the list
// says it looked at 1,000 and links to the next ones, where they are.
func TestWorkflowsListScanBound(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	if err := jobfill.Fill(b.Ctx, b.Pool, b.Schema, 20_000); err != nil {
		t.Fatal(err)
	}
	// 1..1,000 running (every 50th cancelled), 1,001..1,500 failed, the
	// rest succeeded.
	if err := jobfill.Workflows(b.Ctx, b.Pool, b.Schema, 2_000); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	code, body, _ := get(t, c, b.Srv.URL+"/workflows?state=running")
	if code != http.StatusOK || !strings.Contains(body, `id="scanned"`) || !strings.Contains(body, "No running workflows among the 1,000 looked at.") ||
		!strings.Contains(body, `<a id="next" href="workflows?before=1001&amp;state=running">`) {
		t.Fatalf("running, from the newest: %d\n%s", code, body)
	}
	_, body, _ = get(t, c, b.Srv.URL+"/workflows?before=1001&state=running")
	if !strings.Contains(body, `<tr data-id="999"`) || strings.Contains(body, `<tr data-id="1000"`) || strings.Contains(body, `id="scanned"`) {
		t.Errorf("running, from 1,001: not 999 first:\n%s", body)
	}
}
