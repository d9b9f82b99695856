package relay_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is a migrated schema of its own, with a client to publish.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	client *outbox.Client
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	c, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: schema, client: c}
}

// start runs a relay of cfg until the test ends.
func (b *bundle) start(t *testing.T, cfg relay.Config) *relay.Relay {
	t.Helper()
	cfg.Schema = b.schema
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = 5*time.Millisecond, 50*time.Millisecond
	}
	if cfg.RefusalBackoff == 0 {
		cfg.RefusalBackoff = 20 * time.Millisecond
	}
	r, err := relay.New(b.pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			t.Errorf("stop relay: %v", err)
		}
	})
	return r
}

// sink is a Publisher that records what it acknowledges; refuse decides
// each message's fate (nil: acknowledge).
type sink struct {
	mu     sync.Mutex
	got    []relay.Message
	calls  int
	refuse func(relay.Message) error
}

func (s *sink) Publish(_ context.Context, msgs []relay.Message) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if s.refuse != nil {
			if errs[i] = s.refuse(m); errs[i] != nil {
				continue
			}
		}
		s.got = append(s.got, m)
	}
	return errs
}

func (s *sink) Close() error { return nil }

func (s *sink) setRefuse(f func(relay.Message) error) {
	s.mu.Lock()
	s.refuse = f
	s.mu.Unlock()
}

func (s *sink) messages() []relay.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]relay.Message(nil), s.got...)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
