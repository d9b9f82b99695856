package bench

import (
	"math"
	"testing"
	"time"
)

// The server's CPU counts what each process alive at the second reading
// used since the first: one that exited is left out instead of making the
// sum go down, one that started counts whole.
func TestCPUUseCountsEachServerProcess(t *testing.T) {
	t.Parallel()
	c := &cpuClock{postmaster: 1}
	from := cpuTimes{bench: 10 * time.Millisecond, pg: map[int]time.Duration{1: 10 * time.Millisecond, 2: 500 * time.Millisecond}}
	to := cpuTimes{bench: 30 * time.Millisecond, pg: map[int]time.Duration{1: 15 * time.Millisecond, 3: 2 * time.Millisecond}}
	got := c.use(from, to, 1000)
	if math.Abs(got.bench-0.020) > 1e-9 || math.Abs(got.pg-0.007) > 1e-9 || !got.pgKnown {
		t.Errorf("use = %+v, want bench 0.020 s and pg 0.007 s per 1,000 jobs", got)
	}
	if got := (&cpuClock{}).use(from, cpuTimes{bench: 20 * time.Millisecond}, 1000); got.pgKnown || got.pg != 0 {
		t.Errorf("without a postmaster: %+v, want no server figure", got)
	}
}

// A reading sees this process's own CPU time grow.
func TestCPUClockReadsThisProcess(t *testing.T) {
	t.Parallel()
	c := &cpuClock{}
	a := c.read()
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	if b := c.read(); b.bench <= a.bench {
		t.Errorf("bench CPU went from %s to %s over 50 ms of spinning", a.bench, b.bench)
	}
}
