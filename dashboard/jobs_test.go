package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/testkit/jobfill"
)

// A jobs filter that matches nothing stops after the newest 20,000 jobs
// instead of reading the whole table, says so, and links below them.
func TestJobsListScanBound(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	if err := jobfill.Fill(b.Ctx, b.Pool, b.Schema, 25_000); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	code, body, _ := get(t, c, b.Srv.URL+"/jobs?tenant=nobody")
	if code != http.StatusOK || !strings.Contains(body, `id="scanned"`) || !strings.Contains(body, "No jobs match among the 20,000 looked at.") ||
		!strings.Contains(body, `<a id="next" href="jobs?after=`) {
		t.Fatalf("a filter no job matches: %d\n%s", code, body)
	}
	code, body, _ = get(t, c, b.Srv.URL+"/jobs")
	if code != http.StatusOK || strings.Contains(body, `id="scanned"`) {
		t.Errorf("no filter: %d, says it stopped at the bound", code)
	}
}
