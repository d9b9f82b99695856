package handlers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
)

type badKindArgs struct{}

func (badKindArgs) Kind() string { return "has space" }

type ptrArgs struct{ name string }

func (p *ptrArgs) Kind() string { return p.name } // panics on a nil *ptrArgs

func TestRegistry(t *testing.T) {
	t.Parallel()
	nop := func(context.Context, *Job[testArgs]) error { return nil }
	r := NewRegistry()
	if err := Register(r, nop, KindOpts{Queue: "mail", MaxAttempts: 3, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := Register(r, nop, KindOpts{}); !errors.Is(err, ErrDuplicateKind) || !strings.Contains(err.Error(), "test") {
		t.Errorf("second registration: %v, want ErrDuplicateKind naming the kind", err)
	}
	if err := RegisterTx(r, func(context.Context, pgx.Tx, *Job[testArgs]) error { return nil }, KindOpts{}); !errors.Is(err, ErrDuplicateKind) {
		t.Errorf("tx registration of a taken kind: %v", err)
	}
	MustRegisterTx(r, func(context.Context, pgx.Tx, *Job[otherArgs]) error { return nil }, KindOpts{})
	if got := r.Kinds(); !slices.Equal(got, []string{"other", "test"}) {
		t.Errorf("Kinds() = %v", got)
	}
	for name, err := range map[string]error{
		"nil handler":      Register[tenantArgs](r, nil, KindOpts{}),
		"nil tx handler":   RegisterTx[tenantArgs](r, nil, KindOpts{}),
		"bad kind":         Register(r, func(context.Context, *Job[badKindArgs]) error { return nil }, KindOpts{}),
		"bad queue":        Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Queue: "a b"}),
		"neg attempts":     Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{MaxAttempts: -1}),
		"neg timeout":      Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Timeout: -time.Second}),
		"priority 11":      Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Priority: 11}),
		"Kind() panics":    Register(r, func(context.Context, *Job[*ptrArgs]) error { return nil }, KindOpts{}),
		"long queue name":  Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Queue: strings.Repeat("q", outbox.MaxNameLen+1)}),
		"control in queue": Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Queue: "q\n"}),
	} {
		if !errors.Is(err, ErrInvalidKind) {
			t.Errorf("%s: %v, want ErrInvalidKind", name, err)
		}
	}
	if got := r.Kinds(); len(got) != 2 {
		t.Errorf("failed registrations were kept: %v", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustRegister of a taken kind did not panic")
			}
		}()
		MustRegister(r, nop, KindOpts{})
	}()
}

func TestErrorsAreDistinctTypes(t *testing.T) {
	t.Parallel()
	base := errors.New("upstream said no")
	var se *SnoozeError
	var re *RetryAfterError
	var ce *CancelError
	if err := Snooze(time.Second); !errors.As(err, &se) || se.Delay != time.Second || errors.As(err, &ce) {
		t.Errorf("Snooze: %v", err)
	}
	wrapped := errors.Join(errors.New("context"), RetryAfter(time.Minute, base))
	if !errors.As(wrapped, &re) || re.Delay != time.Minute || !errors.Is(wrapped, base) {
		t.Errorf("RetryAfter wrapped: %v", wrapped)
	}
	if err := Cancel(base); !errors.As(err, &ce) || !errors.Is(err, base) || errors.As(err, &re) {
		t.Errorf("Cancel: %v", err)
	}
	if Cancel(nil).Error() == "" || RetryAfter(0, nil).Error() == "" {
		t.Error("nil errors give empty messages")
	}
}

func TestNewWorkerValidates(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ob, err := outbox.New(outbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	MustRegister(reg, func(context.Context, *Job[testArgs]) error { return nil }, KindOpts{})
	ok := Config{DB: pool, Outbox: ob, Registry: reg}
	for name, mod := range map[string]func(*Config){
		"no DB":            func(c *Config) { c.DB = nil },
		"no outbox":        func(c *Config) { c.Outbox = nil },
		"no registry":      func(c *Config) { c.Registry = nil },
		"empty registry":   func(c *Config) { c.Registry = NewRegistry() },
		"negative poll":    func(c *Config) { c.PollInterval = -1 },
		"negative lease":   func(c *Config) { c.Lease = -1 },
		"heartbeat>=lease": func(c *Config) { c.Lease, c.HeartbeatInterval = time.Second, time.Second },
		"pool no queues":   func(c *Config) { c.Pools = []PoolConfig{{Concurrency: 1}} },
		"bad queue":        func(c *Config) { c.Pools = []PoolConfig{{Queues: []string{""}}} },
		"neg concurrency":  func(c *Config) { c.Pools = []PoolConfig{{Queues: []string{"q"}, Concurrency: -1}} },
		"neg tenant cap":   func(c *Config) { c.Pools = []PoolConfig{{Queues: []string{"q"}, TenantCap: -1}} },
		"nil middleware":   func(c *Config) { c.Middleware = []Middleware{nil} },
	} {
		cfg := ok
		mod(&cfg)
		if _, err := NewWorker(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	w, err := NewWorker(ok)
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
	ob2, _ := outbox.New(outbox.Config{Schema: "no_such_schema"})
	ok.Outbox = ob2
	w2, err := NewWorker(ok)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Start(t.Context()); !errors.Is(err, outbox.ErrNotMigrated) {
		t.Errorf("Start without tables: %v, want ErrNotMigrated", err)
	}
}

type mailArgs struct{}

func (mailArgs) Kind() string { return "mail" }

type ownOptsArgs struct{}

func (ownOptsArgs) Kind() string      { return "own" }
func (ownOptsArgs) Opts() outbox.Opts { return outbox.Opts{Queue: "own-queue"} }

// The registry as an outbox client's Kinds: every enqueue gets the kind's
// registered defaults (outbox applies them; see outbox's kinds tests for
// each enqueue path).
func TestRegistryKindDefaultsOnEnqueue(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	reg := NewRegistry()
	MustRegister(reg, func(context.Context, *Job[mailArgs]) error { return nil }, KindOpts{Queue: "mail", Priority: 2, MaxAttempts: 3})
	MustRegister(reg, func(context.Context, *Job[ownOptsArgs]) error { return nil }, KindOpts{Queue: "reg-queue", MaxAttempts: 4})
	c, err := outbox.New(outbox.Config{Schema: e.ob.Schema(), Kinds: reg})
	if err != nil {
		t.Fatal(err)
	}
	if def, ok := reg.EnqueueDefaults("mail"); !ok || def.Queue != "mail" || def.Priority != 2 || def.MaxAttempts != 3 {
		t.Errorf("EnqueueDefaults(mail) = %+v, %v", def, ok)
	}
	if _, ok := reg.EnqueueDefaults("other"); ok {
		t.Error("EnqueueDefaults of an unregistered kind reports it registered")
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
	enq := func(args interface{ Kind() string }, opts outbox.Opts) int64 {
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
		{"registered defaults", enq(mailArgs{}, outbox.Opts{}), "mail", 3},
		{"explicit opts win", enq(mailArgs{}, outbox.Opts{Queue: "other", MaxAttempts: 9}), "other", 9},
		{"args' own opts win", enq(ownOptsArgs{}, outbox.Opts{}), "own-queue", 4},
	} {
		if q, m := row(tc.id); q != tc.q || m != tc.attempt {
			t.Errorf("%s: queue %q max_attempts %d, want %q %d", tc.name, q, m, tc.q, tc.attempt)
		}
	}
	if _, err := c.Enqueue(t.Context(), e.pool, otherArgs{}, outbox.Opts{}); !errors.Is(err, outbox.ErrUnknownKind) {
		t.Errorf("unregistered kind: %v, want ErrUnknownKind", err)
	}
	items := []outbox.Item{{Args: mailArgs{}}, {Args: mailArgs{}, Opts: outbox.Opts{Queue: "x"}}}
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
