// The declarations docs/flow-control.md's Go blocks assume.
package snippet

import (
	"context"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	ctx    context.Context
	pool   *pgxpool.Pool
	client *docket.Client
)
