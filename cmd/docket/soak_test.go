package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/faultsuite"
)

// The short soak of CI: 65 s of 500 jobs/s with a fault every 10 s (each
// kind once, none longer than 7.5 s) and a server restart, 100 schedules
// every 10 s; every invariant must hold. `docket soak` with its defaults is
// the long run.
func TestSoakShort(t *testing.T) {
	t.Setenv(envRunCLI, "1") // for the worker processes only: run() itself is called directly
	code, out, errOut := docket(t, "soak", "--duration", "65s", "--rate", "500", "--fault-every", "10s",
		"--schedules", "100", "--schedule-every", "10s", "--json")
	var res faultsuite.SoakResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d, output %q: %v\n%s", code, out, err, errOut)
	}
	t.Logf("soak: %s\n%s", out, errOut)
	if code != 0 || len(res.Violations) != 0 {
		t.Errorf("exit %d, violations: %s", code, strings.Join(res.Violations, "\n"))
	}
	faults := map[string]bool{}
	for _, f := range res.Faults {
		faults[f.Fault] = true
	}
	for _, f := range []string{"reset", "kill -9", "refuse", "blackhole", "latency", "sigstop", "server restart"} {
		if !faults[f] {
			t.Errorf("the soak injected no %s", f)
		}
	}
	c := res.Counts
	if c.Enqueued < 20_000 || c.Doomed == 0 || c.Retried == 0 {
		t.Errorf("%d jobs enqueued, %d doomed, %d retried: the mix did not run", c.Enqueued, c.Doomed, c.Retried)
	}
	if res.Periods < 3 || res.Ticks != res.Periods*100 {
		t.Errorf("%d schedule runs over %d periods checked, want 100 per period and at least 3 periods", res.Ticks, res.Periods)
	}
	if len(res.RSS) != 2 {
		t.Errorf("RSS of %d workers compared, want the 2 never killed", len(res.RSS))
	}
}
