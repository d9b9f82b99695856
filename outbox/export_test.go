package outbox

import (
	"context"
	"sync"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
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

// BoundedSettings are the settings the bounded reads run with.
const BoundedSettings = sqlBoundedSettings

// OverviewSQL are the statements of Overview and Workers, and DeadGroupsSQL
// the one of DeadGroups, with the arguments they run with. For the plan
// tests.
func (c *Client) OverviewSQL() map[string][]any {
	return map[string][]any{
		c.sql.overviewQueues:    {int64(OverviewLimit)},
		c.sql.overviewTotals:    {int64(OverviewLimit)},
		c.sql.overviewUnserved:  {unservedHead},
		c.sql.workers:           nil,
		c.sql.unservedSchedules: nil,
		c.sql.tableStatus:       nil,
		c.sql.horizon:           nil,
		c.sql.eventStatus:       nil,
		c.sql.deadGroups:        {100, DeadGroupsScope},
	}
}

// JSONBOver returns a JSON document whose jsonb encoding is just over
// PostgreSQL's limit of 268,435,455 bytes while its text is 45 MB: two
// arrays of zeros, 16,777,216 and 5,592,404 of them, 12 bytes each in
// jsonb. With one zero fewer psql gives pg_column_size 268,435,450: 4 bytes
// of header and 268,435,446 of jsonb; the last zero makes 268,435,458.
// Built once: several tests share it; do not modify it.
var JSONBOver = sync.OnceValue(func() []byte {
	return append(append(repeatJSON("[[", "0", 1<<24, "],"), repeatJSON("[", "0", 5592404, "]")...), ']')
})
