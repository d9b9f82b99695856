// The declarations docs/scaling.md's Go blocks assume.
package snippet

import (
	"context"

	"github.com/docketq/docket/handlers"
)

var ctx = context.Background()

// SendInvoice is a tenant's job.
type SendInvoice struct {
	Tenant  string `json:"tenant"`
	Invoice int64  `json:"invoice"`
}

func (SendInvoice) Kind() string { return "send_invoice" }

// Cleanup is each database's nightly housekeeping.
type Cleanup struct{}

func (Cleanup) Kind() string { return "cleanup" }

func sendInvoice(ctx context.Context, j *handlers.Job[SendInvoice]) error { return nil }
func cleanup(ctx context.Context, j *handlers.Job[Cleanup]) error         { return nil }

// groupOf is the application's routing: the tenant group, and so the
// database, that holds a tenant's rows.
func groupOf(tenant string) string { return "eu" }

var tenant = "acme"
