// The declarations docs/dashboard.md's Go blocks assume: the service's own
// pool, router, user and auth middleware.
package snippet

import (
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	pool *pgxpool.Pool
	mux  *http.ServeMux
	user struct{ IsAdmin bool }
)

func requireStaff(h http.Handler) http.Handler { return h }
