// The declarations docs/schedules.md's Go blocks assume.
package snippet

import (
	"context"

	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	ctx    context.Context
	pool   *pgxpool.Pool
	reg    *handlers.Registry
	tenant string
)

type Report struct {
	Tenant string `json:"tenant"`
}

func (Report) Kind() string { return "report" }
