package faultsuite_test

import (
	"flag"
	"os"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/internal/tools/faultsuite"
)

// suiteParallel is how many faults run at once unless -test.parallel says
// otherwise: the faults mostly wait (a 12 s blackhole, 30 s of latency),
// so more than GOMAXPROCS (2 in CI) at once shorten the suite; each holds
// about 25 server connections.
const suiteParallel = "4"

// TestMain runs the worker process when the suite re-executes its own
// binary as one; otherwise the tests, with pgtest's database and leak
// check.
func TestMain(m *testing.M) {
	if faultsuite.IsWorker() {
		os.Exit(faultsuite.RunWorker())
	}
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", suiteParallel)
	}
	pgtest.Main(m)
}
