package faultsuite_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/tools/faultsuite"
	"github.com/jackc/pgx/v5"
)

// Serial keys across processes: 20 keys × 500 jobs, half plain and half
// transactional, drained by 3 worker processes with 40 slots each. Per key
// the jobs run one at a time (each starts after the previous one wrote its
// effect) and in the order they were enqueued; every job finishes exactly
// once (a run repeated after a lease lost under load is at-least-once, and
// counted).
func TestSerialKeysInOrderAcrossProcesses(t *testing.T) {
	const keys, perKey, procs, slots = 20, 500, 3, 40
	r := sharedRun(t)
	r.enq.Item = serialItems(keys)
	r.enqueue(keys * perKey)
	began := time.Now()
	for range procs {
		p, err := faultsuite.Start(exec.Command(os.Args[0]), faultsuite.WorkerSpec{
			URL: r.url, Schema: r.schema, LeaseMS: int(suiteLease.Milliseconds()), Concurrency: slots,
		})
		if err != nil {
			t.Fatal(err)
		}
		r.procs = append(r.procs, p)
		r.ids = append(r.ids, p.ID())
	}
	r.waitDrained(3 * time.Minute)
	took := time.Since(began)
	t.Logf("%d serial jobs over %d keys drained by %d processes × %d slots in %s (%.0f jobs/s)",
		keys*perKey, keys, procs, slots, took, float64(keys*perKey)/took.Seconds())
	for _, p := range r.procs {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}
	c := r.verify()
	if c.Done != keys*perKey {
		t.Errorf("%d jobs done, want %d", c.Done, keys*perKey)
	}
	spread := checkSerialRuns(t, r, keys)
	t.Logf("%d of %d keys ran on more than one process", spread, keys)
	if spread == 0 {
		t.Error("every key ran on one process only: the test did not exercise hand-offs between processes")
	}
}

// checkSerialRuns checks the effects of a drained serial run of jobs whose
// key is n % keys: per key, each job started after the job before it wrote
// its effect, and in the order they were enqueued. It returns how many
// keys ran on more than one process.
func checkSerialRuns(t *testing.T, r *run, keys int) (spread int) {
	t.Helper()
	type effect struct {
		n              int
		started, wrote time.Time
		worker         string
	}
	rows, err := r.db.Query(t.Context(), `SELECT n, started, at, worker FROM `+pgx.Identifier{r.schema}.Sanitize()+`.effects ORDER BY started`)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (effect, error) {
		var x effect
		return x, row.Scan(&x.n, &x.started, &x.wrote, &x.worker)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A job's runs: more than one when a lease ran out under load and the
	// job ran again (at least once). The next job of the key must start
	// after one of them, the one whose completion handed the key on, wrote
	// its effect: after the earliest write.
	type job struct {
		n              int
		started, wrote time.Time
	}
	jobs := map[int]*job{}
	var order []*job // by first start
	workers := map[int]map[string]bool{}
	for _, x := range runs {
		j := jobs[x.n]
		if j == nil {
			j = &job{n: x.n, started: x.started, wrote: x.wrote}
			jobs[x.n] = j
			order = append(order, j)
		}
		if x.wrote.Before(j.wrote) {
			j.wrote = x.wrote
		}
		k := x.n % keys
		if workers[k] == nil {
			workers[k] = map[string]bool{}
		}
		workers[k][x.worker] = true
	}
	t.Logf("%d effects for %d jobs (%d runs repeated after a lost lease)", len(runs), len(jobs), len(runs)-len(jobs))
	last := map[int]*job{}
	overlaps, outOfOrder := 0, 0
	for _, x := range order {
		k := x.n % keys
		if p, ok := last[k]; ok {
			if x.started.Before(p.wrote) {
				overlaps++
				if overlaps <= 5 {
					t.Errorf("key k%02d: job n=%d started at %s, before job n=%d finished its run at %s",
						k, x.n, x.started.Format(time.StampMicro), p.n, p.wrote.Format(time.StampMicro))
				}
			}
			if x.n < p.n {
				outOfOrder++
				if outOfOrder <= 5 {
					t.Errorf("key k%02d: job n=%d ran after job n=%d, which was enqueued after it", k, x.n, p.n)
				}
			}
		}
		last[k] = x
	}
	if overlaps+outOfOrder > 0 {
		t.Errorf("%d overlapping runs and %d runs out of order", overlaps, outOfOrder)
	}
	for _, ws := range workers {
		if len(ws) > 1 {
			spread++
		}
	}
	return spread
}

// Serial keys through crashes: 10 keys × 150 jobs, half transactional, on
// three worker processes with 20 slots each, one of them killed (SIGKILL)
// when a third is done and replaced. Its running and claimed jobs wait
// out their lease; still no two runs of a key overlap
// and each key's jobs run in the order they were enqueued.
func TestSerialKeysInOrderThroughCrash(t *testing.T) {
	const keys, perKey, procs, slots = 10, 150, 3, 20
	r := sharedRun(t)
	r.enq.Item = serialItems(keys)
	r.enqueue(keys * perKey)
	start := func() *faultsuite.Process {
		p, err := faultsuite.Start(exec.Command(os.Args[0]), faultsuite.WorkerSpec{
			URL: r.url, Schema: r.schema, LeaseMS: int(suiteLease.Milliseconds()), Concurrency: slots,
		})
		if err != nil {
			t.Fatal(err)
		}
		r.procs = append(r.procs, p)
		r.ids = append(r.ids, p.ID())
		return p
	}
	for range procs {
		start()
	}
	r.waitDone(keys*perKey/3, 3*time.Minute)
	r.procs[0].Kill()
	start()
	r.waitDrained(3 * time.Minute)
	for _, p := range r.procs[1:] {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}
	c := r.verify()
	if c.Done != keys*perKey {
		t.Errorf("%d jobs done, want %d", c.Done, keys*perKey)
	}
	checkSerialRuns(t, r, keys)
}

// serialItems spreads the enqueued jobs round robin over keys serial keys,
// every other one transactional.
func serialItems(keys int) func(n int) docket.Item {
	return func(n int) docket.Item {
		opts := docket.Opts{SerialKey: fmt.Sprintf("k%02d", n%keys)}
		if n%2 == 0 {
			return docket.Item{Args: faultsuite.Plain{Work: faultsuite.Work{N: n}}, Opts: opts}
		}
		return docket.Item{Args: faultsuite.Tx{Work: faultsuite.Work{N: n}}, Opts: opts}
	}
}
