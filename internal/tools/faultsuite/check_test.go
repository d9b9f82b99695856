package faultsuite_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/tools/faultsuite"
)

// The checker finds what it is there to find: a clean run passes, and a
// job finished twice, a transactional effect written twice, a plain job
// without its effect and a job left in the table are each reported.
func TestCheckFindsViolations(t *testing.T) {
	t.Parallel()
	r := sharedRun(t)
	r.enqueue(20)
	p, err := faultsuite.Start(exec.Command(os.Args[0]), faultsuite.WorkerSpec{URL: r.url, Schema: r.schema, LeaseMS: 2000, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	r.procs, r.ids = append(r.procs, p), append(r.ids, p.ID())
	r.waitDrained(30 * time.Second)
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c := r.verify(); c.Enqueued != 20 || c.Done != 20 {
		t.Fatalf("clean run: %+v", c)
	}

	exec := func(sql string) {
		t.Helper()
		if _, err := r.db.Exec(t.Context(), strings.ReplaceAll(sql, "{{schema}}", r.schema)); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO {{schema}}.effects (job_id, n, attempt, kind, worker)
		SELECT job_id, n, attempt, kind, worker FROM {{schema}}.effects WHERE kind = 'faultsuite_tx' LIMIT 1`)
	exec(`DELETE FROM {{schema}}.effects WHERE job_id = (SELECT min(job_id) FROM {{schema}}.effects WHERE kind = 'faultsuite_plain')`)
	exec(`INSERT INTO {{schema}}.docket_jobs_done SELECT * FROM {{schema}}.docket_jobs_done WHERE id = (SELECT max(id) FROM {{schema}}.docket_jobs_done)`)
	r.enqueue(1) // no worker left to run it
	c, err := faultsuite.Check(t.Context(), r.db, r.schema)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Violations(), "\n")
	for _, want := range []string{"not every job exactly once", "1 jobs left in the jobs table", "want exactly one each", "without an effect: want one at least"} {
		if !strings.Contains(got, want) {
			t.Errorf("violations do not report %q:\n%s", want, got)
		}
	}
}
