package handlers

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// sqlSerialLock takes the transaction-scoped advisory lock of a serial key.
// The lock's key is a 64-bit hash of the namespace (Docket's schema) and the
// serial key, so applications in other schemas never collide with ours; a
// hash collision between two keys only serializes them needlessly. It is
// never a session lock: it ends with the transaction, also when the
// connection is lost, and works behind transaction-mode poolers.
const sqlSerialLock = `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`

func (w *Worker) trySerialLock(ctx context.Context, tx pgx.Tx, key string) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, sqlSerialLock, "docket_serial:"+w.ob.Schema()+":"+key).Scan(&ok)
	return ok, err
}

// serialHolds are the serial keys this process's slots are running, so that
// a second job of a held key is snoozed without a round trip.
type serialHolds struct {
	mu   sync.Mutex
	held map[string]struct{}
}

func (s *serialHolds) hold(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[key]; ok {
		return false
	}
	s.held[key] = struct{}{}
	return true
}

func (s *serialHolds) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, key)
}
