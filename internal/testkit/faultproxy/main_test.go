package faultproxy_test

import (
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

// TestMain checks, after the tests, that no goroutine of the proxy or of
// the tests' servers is left.
func TestMain(m *testing.M) { pgtest.Main(m) }
