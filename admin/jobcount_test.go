package admin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/jobfill"
)

// countsOf runs Jobs.CountStates and returns its counts by state, as "N"
// or "N+".
func (b *bundle) countsOf(t *testing.T, f admin.JobFilter) map[string]string {
	t.Helper()
	got, err := b.ops.Jobs().CountStates(b.Ctx, b.Pool, f)
	if err != nil {
		t.Fatalf("%+v: %v", f, err)
	}
	out := map[string]string{}
	for i, c := range got {
		if c.State != admin.JobStates()[i] {
			t.Errorf("count %d is of state %s, want %s", i, c.State, admin.JobStates()[i])
		}
		out[c.State] = fmt.Sprint(c.N)
		if c.More {
			out[c.State] += "+"
		}
	}
	return out
}

func checkCounts(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for _, st := range admin.JobStates() {
		if got[st] != want[st] {
			t.Errorf("%s: %s %q, want %q", what, st, got[st], want[st])
		}
	}
}

// Each state's count is exact below CountLimit, stops there with More, and
// is exact again when the filter field that leads the state's index
// narrows it; other filter fields are counted among the jobs read.
func TestCountStates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := jobfill.Fill(b.Ctx, b.Pool, b.Schema, 2_000); err != nil {
		t.Fatal(err)
	}
	// One serial key's line: its head is ready, four wait.
	b.EnqueueN(t, 5, enqueue.Opts{Queue: "mail", SerialKey: "acct-x"})
	// exact counts a state's jobs that match a condition, all of them.
	exact := func(state, cond string) int {
		table, pred := "docket_jobs", "state = '"+state+"'"
		switch state {
		case admin.StateDead:
			table, pred = "docket_jobs_dead", "true"
		case admin.StateCompleted:
			table, pred = "docket_jobs_done", "true"
		}
		return b.Count(t, "SELECT count(*) FROM "+b.Table(table)+" WHERE "+pred+" AND "+cond)
	}
	all := func(cond string) map[string]string {
		out := map[string]string{}
		for _, st := range admin.JobStates() {
			out[st] = fmt.Sprint(exact(st, cond))
		}
		return out
	}

	want := all("true")
	if n := exact(admin.StateReady, "true"); n <= admin.CountLimit {
		t.Fatalf("%d ready jobs: the test wants more than %d", n, admin.CountLimit)
	}
	want["ready"] = fmt.Sprint(admin.CountLimit) + "+"
	checkCounts(t, "no filter", b.countsOf(t, admin.JobFilter{}), want)

	// The queue leads the claim index: ready jobs of a queue are exact,
	// and so is every other state, under CountLimit jobs each.
	checkCounts(t, "queue mail", b.countsOf(t, admin.JobFilter{Queue: "mail", State: admin.StateDead}), all("queue = 'mail'"))

	// The kind does not lead the claim index: ready jobs of a kind are
	// counted among the first CountLimit ready jobs read, a lower bound.
	got := b.countsOf(t, admin.JobFilter{Kind: "k3"})
	want = all("kind = 'k3'")
	var lower int
	if n := exact(admin.StateReady, "kind = 'k3'"); n > admin.CountLimit/2 {
		t.Fatalf("%d ready jobs of kind k3: the test wants fewer", n)
	} else if _, err := fmt.Sscanf(got["ready"], "%d+", &lower); err != nil || !strings.HasSuffix(got["ready"], "+") || lower >= n || lower < n/4 {
		t.Errorf("ready of kind k3: %q, want a lower bound under %d with a +", got["ready"], n)
	}
	want["ready"] = got["ready"]
	checkCounts(t, "kind k3", got, want)

	// Every field at once, error text included: history keeps no error.
	checkCounts(t, "queue, kind, serial key and error", b.countsOf(t, admin.JobFilter{Queue: "mail", Kind: "noop", SerialKey: "acct-x", ErrorContains: "x"}),
		map[string]string{"scheduled": "0", "ready": "0", "waiting": "0", "running": "0", "dead": "0", "completed": "0"})
	// The serial key leads the index of the lines: waiting jobs are exact.
	if got := b.countsOf(t, admin.JobFilter{SerialKey: "acct-x"}); got["waiting"] != "4" {
		t.Errorf("waiting jobs of serial key acct-x: %q, want 4", got["waiting"])
	}

	if _, err := b.ops.Jobs().CountStates(b.Ctx, b.Pool, admin.JobFilter{Queue: "a\x00b"}); err == nil {
		t.Error("a filter value with a NUL byte was counted")
	}
}
