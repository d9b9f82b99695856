package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/docketq/docket/dashboard"
)

// The dashboard pauses and resumes only queues in use, the ones its pages
// list: a name nobody uses is answered 404 and creates no queue.
func TestQueueActionUnknownQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/")
	for _, action := range []string{"pause", "resume"} {
		code, body, _ := post(t, c, b.Srv.URL+"/queues/action", url.Values{"csrf": {token}, "action": {action}, "queue": {"mial"}})
		if code != http.StatusNotFound || !strings.Contains(body, "unknown queue &#34;mial&#34;") {
			t.Errorf("%s of a queue nobody uses: %d, want 404 naming it:\n%s", action, code, body)
		}
	}
	var rows int
	if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM "`+b.Schema+`".docket_queues`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("refused actions left %d docket_queues rows (%v)", rows, err)
	}
	if code, _, h := post(t, c, b.Srv.URL+"/queues/action", url.Values{"csrf": {token}, "action": {"pause"}, "queue": {"bounce"}}); code != http.StatusSeeOther ||
		!strings.Contains(h.Get("Location"), "queue+bounce%3A+paused") {
		t.Errorf("pause of a listed queue: %d %q", code, h.Get("Location"))
	}
}
