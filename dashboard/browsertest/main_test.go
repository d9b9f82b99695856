package browsertest_test

import (
	"testing"

	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/dashboard/internal/dashtest"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The dashboard tests' fixture.
type (
	mail       = dashtest.Mail
	syncBuffer = dashtest.SyncBuffer
)

const secret = dashtest.Secret

var csrfInput = dashtest.CSRFInput

func setup(t *testing.T, cfg dashboard.Config) *dashtest.Bundle { return dashtest.Setup(t, cfg) }
