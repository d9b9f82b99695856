package docket_test

import (
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bundle is what the enqueue tests need: a migrated schema of their own
// (jobtest) and a client on it.
type bundle struct {
	*jobtest.Env
	client *docket.Client
}

// setup gives the test a fresh migrated schema and a client of cfg (whose
// Schema it sets) on it.
func setup(t testing.TB, cfg ...docket.Config) *bundle {
	t.Helper()
	var c docket.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newBundle(t, pgtest.Pool(t), c)
}

// newBundle migrates a fresh schema on pool for a client of cfg.
func newBundle(t testing.TB, pool *pgxpool.Pool, cfg docket.Config) *bundle {
	t.Helper()
	env := jobtest.New(t, pool, queue.Config{DisableHistory: cfg.DisableHistory})
	cfg.Schema = env.Schema
	client, err := docket.NewClient(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{Env: env, client: client}
}

type (
	noop  = jobtest.Noop
	other = jobtest.Other
)
