package worker

import (
	"testing"

	"github.com/docketq/docket/internal/engine/core"
)

// places runs at most a tenant's places' worth of its jobs at once, starts
// the next when one ran, and keeps the places of the latest claim when
// claims return out of order: an older claim's places could be more than
// the process holds now.
func TestPlacesGateRunsWithinLatestPlaces(t *testing.T) {
	p := &pool{limited: make(chan *task, 10)}
	job := func() *task { return &task{limit: "l", placed: true, pool: p, job: &core.Job{Tenant: "a"}} }
	s := newPlaces()
	handed := func() int { return len(p.limited) }

	t1, t2, t3 := job(), job(), job()
	s.granted("l", 2, map[string]int{"a": 1}, []*task{t1, t2})
	if handed() != 1 {
		t.Fatalf("%d jobs handed to slots with one place", handed())
	}
	// An older claim, arriving late, said 3 places: still one.
	s.granted("l", 1, map[string]int{"a": 3}, []*task{t3})
	if handed() != 1 {
		t.Fatalf("%d jobs handed to slots after an older claim's places", handed())
	}
	if got := <-p.limited; got != t1 {
		t.Fatal("the first job claimed was not the first handed on")
	}
	s.ran(t1)
	if handed() != 1 || <-p.limited != t2 {
		t.Fatal("the tenant's next job did not take the place its first freed")
	}
	// A later claim gives a second place: the third job starts beside t2.
	s.granted("l", 3, map[string]int{"a": 2}, nil)
	if handed() != 1 || <-p.limited != t3 {
		t.Fatal("a second place did not start the tenant's waiting job")
	}
	s.ran(t2)
	s.ran(t3)
	if len(s.lines) != 0 {
		t.Fatalf("a tenant with no job left keeps its line: %v", s.lines)
	}
}

// A stopping pool's jobs still waiting for a place go to its slots, which
// release them.
func TestPlacesFlushHandsWaitingJobsOn(t *testing.T) {
	p := &pool{limited: make(chan *task, 10)}
	s := newPlaces()
	var tasks []*task
	for range 3 {
		tasks = append(tasks, &task{limit: "l", placed: true, pool: p, job: &core.Job{Tenant: "a"}})
	}
	s.granted("l", 1, map[string]int{"a": 1}, tasks)
	s.flush(p)
	if n := len(p.limited); n != 3 {
		t.Fatalf("%d of 3 jobs handed on at stop", n)
	}
}
