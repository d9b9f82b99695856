package dashboard_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/partition"
)

// The chart counts a settled minute once per process: history written
// since into a minute more than two minutes old is not counted again (it
// cannot happen but by hand, as here), while the current minute is read
// on every request; another process reads everything.
func TestThroughputCountsSettledMinutesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	now := time.Now().UTC()
	if now.Sub(now.Truncate(time.Minute)) > 50*time.Second {
		time.Sleep(11 * time.Second) // the requests below fall in one minute
		now = time.Now().UTC()
	}
	if err := partition.Of(b.Schema).Ensure(b.Ctx, b.Pool, now.Add(-time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	finish := func(at time.Time) {
		t.Helper()
		if _, err := b.Pool.Exec(b.Ctx, `INSERT INTO `+b.Schema+`.docket_jobs_done (id, queue, kind, priority, tenant, attempts, max_attempts,
			created_at, run_at, started_at, finished_at, payload)
			VALUES (nextval('`+b.Schema+`.docket_jobs_id_seq'), 'mail', 'mail', 0, '', 1, 25, $1, $1, $1, $1, '{}')`, at); err != nil {
			t.Fatal(err)
		}
	}
	old, current := now.Add(-5*time.Minute).Truncate(time.Minute), now.Truncate(time.Minute)
	completed := func(srv *httptest.Server) map[int64]int64 {
		t.Helper()
		c := client(t)
		code, body, _ := get(t, c, srv.URL+"/throughput")
		if code != 200 {
			t.Fatalf("throughput: %d %s", code, body)
		}
		var points []struct{ T, Completed int64 }
		if err := json.Unmarshal([]byte(body), &points); err != nil {
			t.Fatal(err)
		}
		if len(points) != 60 {
			t.Fatalf("%d points, want 60", len(points))
		}
		out := map[int64]int64{}
		for _, p := range points {
			out[p.T] = p.Completed
		}
		return out
	}
	finish(old.Add(time.Second))
	finish(current.Add(time.Second))
	if got := completed(b.Srv); got[old.Unix()] != 1 || got[current.Unix()] != 1 {
		t.Fatalf("first read: old minute %d, current %d; want 1 and 1", got[old.Unix()], got[current.Unix()])
	}
	finish(old.Add(2 * time.Second))
	finish(current.Add(2 * time.Second))
	if got := completed(b.Srv); got[old.Unix()] != 1 || got[current.Unix()] != 2 {
		t.Errorf("second read: old minute %d, current %d; want 1 (settled, cached) and 2 (read again)", got[old.Unix()], got[current.Unix()])
	}
	h, err := dashboard.Handler(b.Pool, dashboard.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	fresh := httptest.NewServer(h)
	t.Cleanup(fresh.Close)
	if got := completed(fresh); got[old.Unix()] != 2 || got[current.Unix()] != 2 {
		t.Errorf("another process: old minute %d, current %d; want 2 and 2", got[old.Unix()], got[current.Unix()])
	}
}
