package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/tools/faultsuite"
)

// The test binary is also the soak's worker program: faultsuite starts it
// again as a worker process.
func TestMain(m *testing.M) {
	if faultsuite.IsWorker() {
		os.Exit(faultsuite.RunWorker())
	}
	os.Exit(m.Run())
}

func testBinary() *exec.Cmd { return exec.Command(os.Args[0]) }

// The short soak of CI: 50 s of 500 jobs/s with a fault every 7 s (each
// kind at least once, none longer than 5.25 s) and a server restart, 100
// schedules every 10 s; every invariant must hold. The soak with its defaults is the
// long run.
func TestSoakShort(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"--duration", "50s", "--rate", "500", "--fault-every", "7s",
		"--schedules", "100", "--schedule-every", "10s", "--json"}, &out, &errOut, testBinary)
	var res faultsuite.SoakResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("exit %d, output %q: %v\n%s", code, out.String(), err, errOut.String())
	}
	t.Logf("soak: %s\n%s", out.String(), errOut.String())
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

// A misuse is exit 2 before anything starts.
func TestSoakUsage(t *testing.T) {
	for _, args := range [][]string{{"--rate", "0"}, {"--duration", "-1s"}, {"--schedule-every", "7s"}, {"extra"}, {"--nope"}} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut, testBinary); code != 2 || strings.Contains(errOut.String(), "starting") {
			t.Errorf("soak %v: exit %d, stderr %q; want 2 before starting", args, code, errOut.String())
		}
	}
}
