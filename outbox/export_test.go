package outbox

import (
	"context"
	"testing"

	"github.com/docketq/docket/internal/pgtest"
)

// MigratedClient returns a client of cfg on a fresh schema, migrated, and
// the schema's name. Exported for the external tests as well.
func MigratedClient(t testing.TB, ctx context.Context, pool TxBeginner, cfg Config) (*Client, string) {
	t.Helper()
	cfg.Schema = pgtest.Schema(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMigrator(cfg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return c, cfg.Schema
}

// ListSQL is the statement ListJobs runs for a state; JobByIDSQL the one of
// JobByID. For the plan tests.
func (c *Client) ListSQL(state string) string { return c.list[state] }
func (c *Client) JobByIDSQL() string          { return c.sql.jobByID }
