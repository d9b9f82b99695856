package worker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	ok := Config{DB: pool, Handlers: reg}
	for name, mod := range map[string]func(*Config){
		"no DB":            func(c *Config) { c.DB = nil },
		"no registry":      func(c *Config) { c.Handlers = nil },
		"empty registry":   func(c *Config) { c.Handlers = handlers.NewRegistry() },
		"negative poll":    func(c *Config) { c.PollInterval = -1 },
		"negative lease":   func(c *Config) { c.Lease = -1 },
		"heartbeat>=lease": func(c *Config) { c.Lease, c.HeartbeatInterval = time.Second, time.Second },
		"pool no queues":   func(c *Config) { c.Pools = []PoolConfig{{Concurrency: 1}} },
		"bad queue":        func(c *Config) { c.Pools = []PoolConfig{{Queues: []string{""}}} },
		"neg concurrency":  func(c *Config) { c.Pools = []PoolConfig{{Queues: []string{"q"}, Concurrency: -1}} },
		"neg tenant cap":   func(c *Config) { c.Pools = []PoolConfig{{Queues: []string{"q"}, TenantCap: -1}} },
		"nil middleware":   func(c *Config) { c.Middleware = []core.Middleware{nil} },
	} {
		cfg := ok
		mod(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	w, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if w.poll != DefaultPollInterval || w.lease != DefaultLease || w.hbInterval != DefaultLease/3 ||
		w.shutdown != DefaultShutdownTimeout || w.partitions.retention != DefaultHistoryRetention || w.ID().String() == "" {
		t.Errorf("defaults not applied: %+v", w)
	}
	if len(w.pools) != 1 || w.pools[0].cfg.Concurrency != DefaultConcurrency || w.pools[0].cfg.Queues[0] != "default" {
		t.Errorf("default pool: %+v", w.pools[0].cfg)
	}
	// Stop before Start does nothing; Start on a schema without tables fails clearly.
	if err := w.Stop(t.Context()); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
	ok.Schema = "no_such_schema"
	w2, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Start(t.Context()); !errors.Is(err, pgsql.ErrNotMigrated) {
		t.Errorf("Start without tables: %v, want ErrNotMigrated", err)
	}
}

type mailArgs struct{}

func (mailArgs) Kind() string { return "mail" }

type reportArgs struct{}

func (reportArgs) Kind() string { return "report" }

// The registry as the enqueue engine's Kinds, as docket.NewClient sets it:
// every enqueue gets the kind's registered defaults (the engine applies
// them; see root docket's kinds tests for each enqueue path, and for the
// args' own Opts, which docket.Client merges before the engine).
func TestRegistryKindDefaultsOnEnqueue(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[mailArgs]) error { return nil }, handlers.KindOpts{Queue: "mail", Priority: 2, MaxAttempts: 3})
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[reportArgs]) error { return nil }, handlers.KindOpts{Queue: "reg-queue", MaxAttempts: 4})
	c, err := enqueue.New(enqueue.Config{Schema: e.schema, Kinds: reg})
	if err != nil {
		t.Fatal(err)
	}
	if def, ok := reg.KindOpts("mail"); !ok || def.Queue != "mail" || def.Priority != 2 || def.MaxAttempts != 3 {
		t.Errorf("KindOpts(mail) = %+v, %v", def, ok)
	}
	if _, ok := reg.KindOpts("other"); ok {
		t.Error("KindOpts of an unregistered kind reports it registered")
	}
	if got := reg.Queues(); !slices.Equal(got, []string{"mail", "reg-queue"}) {
		t.Errorf("Queues() = %v", got)
	}
	row := func(id int64) (q string, max int) {
		t.Helper()
		if err := e.pool.QueryRow(t.Context(), e.sql(`SELECT queue, max_attempts FROM {{schema}}.docket_jobs WHERE id = $1`), id).Scan(&q, &max); err != nil {
			t.Fatal(err)
		}
		return q, max
	}
	enq := func(args interface{ Kind() string }, opts enqueue.Opts) int64 {
		t.Helper()
		res, err := c.Enqueue(t.Context(), e.pool, args, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	for _, tc := range []struct {
		name    string
		id      int64
		q       string
		attempt int
	}{
		{"registered defaults", enq(mailArgs{}, enqueue.Opts{}), "mail", 3},
		{"explicit opts win", enq(mailArgs{}, enqueue.Opts{Queue: "other", MaxAttempts: 9}), "other", 9},
	} {
		if q, m := row(tc.id); q != tc.q || m != tc.attempt {
			t.Errorf("%s: queue %q max_attempts %d, want %q %d", tc.name, q, m, tc.q, tc.attempt)
		}
	}
	if _, err := c.Enqueue(t.Context(), e.pool, otherArgs{}, enqueue.Opts{}); !errors.Is(err, enqueue.ErrUnknownKind) {
		t.Errorf("unregistered kind: %v, want ErrUnknownKind", err)
	}
	items := []enqueue.Item{{Args: mailArgs{}}, {Args: mailArgs{}, Opts: enqueue.Opts{Queue: "x"}}}
	res, err := c.EnqueueMany(t.Context(), e.pool, items)
	if err != nil {
		t.Fatal(err)
	}
	if q, m := row(res[0].ID); q != "mail" || m != 3 {
		t.Errorf("EnqueueMany defaults: %s %d", q, m)
	}
	if q, _ := row(res[1].ID); q != "x" {
		t.Errorf("EnqueueMany explicit queue: %s", q)
	}
	if items[0].Opts.Queue != "" {
		t.Error("EnqueueMany modified the caller's items")
	}
}
