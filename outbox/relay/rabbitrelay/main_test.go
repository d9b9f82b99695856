package rabbitrelay_test

import (
	"testing"

	"github.com/docketq/docket/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
