package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docketq/docket/dashboard"
)

// One process serving several databases mounts one dashboard per database,
// each under its own prefix: each shows its own database's queues and
// links within its prefix (its pages' links are relative to it). (Two
// schemas stand in for two databases: a dashboard is bound to one pool and
// schema.)
func TestOneDashboardPerDatabase(t *testing.T) {
	t.Parallel()
	eu, us := setup(t, dashboard.Config{}), setup(t, dashboard.Config{})
	enqueueMail(t, eu, "eu_only")
	enqueueMail(t, us, "us_only")
	mux := http.NewServeMux()
	for prefix, b := range map[string]*bundle{"/eu": eu, "/us": us} {
		h, err := dashboard.Handler(b.Pool, dashboard.Config{Schema: b.Schema})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := client(t)
	for prefix, want := range map[string][2]string{"/eu": {"eu_only", "us_only"}, "/us": {"us_only", "eu_only"}} {
		code, body, _ := get(t, c, srv.URL+prefix+"/")
		if code != http.StatusOK {
			t.Fatalf("GET %s/: %d", prefix, code)
		}
		if !strings.Contains(body, want[0]) || strings.Contains(body, want[1]) {
			t.Errorf("%s/ should show queue %s and not %s", prefix, want[0], want[1])
		}
		if !strings.Contains(body, `<base href="`+prefix+`/">`) {
			t.Errorf("%s/ does not link within its prefix", prefix)
		}
	}
}
