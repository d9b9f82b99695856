package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/dashboard"
)

// Deleting a job from its own page lands on the jobs list with the
// message, not on the deleted job's 404.
func TestDeleteFromJobPageReturnsToList(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	page := fmt.Sprintf("/jobs/%d", b.Ready)
	form := url.Values{"csrf": {csrf(t, c, b.Srv.URL+page)}, "action": {"delete"}, "id": {fmt.Sprint(b.Ready)}, "return": {page},
		"confirm": {"1"}, "count": {"1"}}
	code, _, h := post(t, c, b.Srv.URL+"/jobs/action", form)
	if code != http.StatusSeeOther || h.Get("Location") != "/jobs?msg=deleted+1+job" {
		t.Fatalf("delete from the job page: %d to %q, want the jobs list", code, h.Get("Location"))
	}
	if code, body, _ := get(t, c, b.Srv.URL+h.Get("Location")); code != http.StatusOK || !strings.Contains(body, `<p class="msg" role="status">deleted 1 job</p>`) {
		t.Errorf("the list after delete: %d\n%s", code, body)
	}
	// A refused delete stays on the job's page.
	page = fmt.Sprintf("/jobs/%d", b.Running)
	form.Set("id", fmt.Sprint(b.Running))
	form.Set("return", page)
	if _, _, h := post(t, c, b.Srv.URL+"/jobs/action", form); !strings.HasPrefix(h.Get("Location"), page+"?") ||
		!strings.Contains(h.Get("Location"), url.QueryEscape("not deleted: the job is running")) {
		t.Errorf("refused delete: to %q", h.Get("Location"))
	}
}

// Payloads are shown as written: html/template escapes them for HTML, the
// JSON encoder does not escape them a second time (\u003c).
func TestPayloadNotDoubleEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{ShowPayloads: true})
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	e, err := cl.Enqueue(b.Ctx, b.Pool, mail{To: `Ann <ann@example.com> & "Bob"`}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := get(t, client(t), b.Srv.URL+fmt.Sprintf("/jobs/%d", e.ID))
	if !strings.Contains(body, `&#34;to&#34;: &#34;Ann &lt;ann@example.com&gt; &amp; \&#34;Bob\&#34;&#34;`) || strings.Contains(body, `\u00`) {
		t.Errorf("payload:\n%s", body)
	}
}

// A long error shared by many rows is shown once, cut, on the list; the
// job page has it whole.
func TestLongErrorShownOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	long := "upstream said: " + strings.Repeat("very long diagnostic ", 40) + "end"
	b.DeadN(t, "long", 3, long)
	c := client(t)
	_, body, _ := get(t, c, b.Srv.URL+"/jobs?state=dead&queue=long")
	if strings.Contains(body, long) || strings.Count(body, "upstream said: very long") != 1 || strings.Count(body, "same error as above") != 2 {
		t.Errorf("the list repeats or shows the whole error:\n%s", body)
	}
	_, body, _ = get(t, c, b.Srv.URL+"/dead")
	if strings.Contains(body, ">"+long+"<") {
		t.Errorf("the dead-letters page shows the whole error in its table")
	}
	ids, _ := b.Ops.Jobs().List(b.Ctx, b.Pool, dashboardFilter("long"))
	_, body, _ = get(t, c, b.Srv.URL+fmt.Sprintf("/jobs/%d", ids.Jobs[0].ID))
	if !strings.Contains(body, long) {
		t.Errorf("the job page does not show the whole error")
	}
}
