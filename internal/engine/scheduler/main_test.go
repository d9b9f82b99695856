package scheduler_test

import (
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
