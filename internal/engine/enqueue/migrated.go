package enqueue

import (
	"context"
	"fmt"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// checkMigrated returns an ErrNotMigrated error when the client's jobs table
// does not exist, before an enqueue sends a statement that would fail on it
// and abort the caller's transaction. The first positive answer is kept, so
// only a client's first enqueue pays the round trip; a negative one is not,
// so enqueues succeed as soon as the migrations have run. Should the tables
// go later (a schema dropped, `docket migrate down`), the failing statement
// is reported as ErrNotMigrated by wrapErr, which also forgets the answer.
func (c *Client) checkMigrated(ctx context.Context, cn pgsql.Conn) error {
	if c.migrated.Load() {
		return nil
	}
	var ok bool
	err := cn.Query(ctx, pgsql.TableExists, []any{`"` + c.schema + `".docket_jobs`}, func(scan func(...any) error) error {
		return scan(&ok)
	})
	if err != nil {
		return c.wrapErr(err)
	}
	if !ok {
		return fmt.Errorf("%w (schema %s)", ErrNotMigrated, c.schema)
	}
	c.migrated.Store(true)
	return nil
}
