package admin_test

import (
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is what most tests need: a migrated schema of their own, jobs
// enqueued and claimed in it (jobtest), and the operations on it.
type bundle struct {
	*jobtest.Env
	ops *admin.Client
}

// setup migrates a fresh schema for the test.
func setup(t *testing.T) *bundle {
	t.Helper()
	env := jobtest.New(t, pgtest.Pool(t), queue.Config{})
	ops, err := admin.New(admin.Config{Schema: env.Schema})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{Env: env, ops: ops}
}

type (
	noop  = jobtest.Noop
	other = jobtest.Other
)
