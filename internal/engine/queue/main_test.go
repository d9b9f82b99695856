package queue

import (
	"context"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated migrates a fresh schema on pool and returns a client of cfg
// that enqueues into it, the Queue on it (with cfg's history and cursor
// lag) and the schema's name.
func migrated(t testing.TB, ctx context.Context, pool outbox.TxBeginner, cfg outbox.Config) (*outbox.Client, *Queue, string) {
	t.Helper()
	cfg.Schema = pgtest.Schema(t)
	ob, err := outbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := outbox.NewMigrator(cfg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	q, err := New(cfg.Schema, Config{DisableHistory: cfg.DisableHistory, CursorLag: cfg.ClaimCursorLag})
	if err != nil {
		t.Fatal(err)
	}
	return ob, q, cfg.Schema
}
