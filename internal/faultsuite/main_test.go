package faultsuite_test

import (
	"os"
	"testing"

	"github.com/docketq/docket/internal/faultsuite"
	"github.com/docketq/docket/internal/pgtest"
)

// TestMain runs the worker process when the suite re-executes its own
// binary as one; otherwise the tests, with pgtest's database and leak
// check.
func TestMain(m *testing.M) {
	if faultsuite.IsWorker() {
		os.Exit(faultsuite.RunWorker())
	}
	pgtest.Main(m)
}
