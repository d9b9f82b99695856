package queue_test

import (
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bundle is what most tests need: a migrated schema of their own, jobs
// enqueued and claimed in it (jobtest), and the operations on it, to set
// limits.
type bundle struct {
	*jobtest.Env
	ops *admin.Client
}

func setup(t *testing.T, cfg ...queue.Config) *bundle {
	t.Helper()
	var c queue.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newBundle(t, pgtest.Pool(t), c)
}

// newBundle migrates a fresh schema on pool, with the Queue of cfg on it.
func newBundle(t testing.TB, pool *pgxpool.Pool, cfg queue.Config) *bundle {
	t.Helper()
	env := jobtest.New(t, pool, cfg)
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

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
