package docket_test

import (
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// databaseURL is what a program reads from DATABASE_URL: here, the test
// package's own database.
func databaseURL() string { return pgtest.ExampleURL() }
