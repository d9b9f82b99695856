package relay

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MaxIDLen is the longest Config.ID, in bytes.
const MaxIDLen = 200

// idSpace derives a relay's row id in docket_relays (and owner in
// docket_relay_parts) from its ID, so that a relay restarted under the ID
// finds the partitions of the one that died.
var idSpace = uuid.MustParse("6f0b8a52-2c47-4d7e-9a0e-4a1f7f3c9d21")

// identity holds a relay's ID: a session-level advisory lock, taken on a
// connection of its own, that only one session at a time can hold. While a
// relay holds its ID, no other live relay publishes under it; when its
// process dies, PostgreSQL ends the session and the lock is free at once.
type identity struct {
	conn   *pgx.ConnConfig
	schema string
	fixed  string // Config.ID; empty: the first free of host/schema/1, /2, ...
	host   string
}

// session is one hold of an ID. Its connection also runs the lease
// statements, so that a relay whose session is gone can no longer change
// the partitions of its ID; mu keeps them and the watch's checks apart.
type session struct {
	id   string
	key  int64
	mu   sync.Mutex
	conn *pgx.Conn
}

// newIdentity returns the identity of a relay of cfg whose connections of
// its own have configuration conn, or nil when conn is nil (see
// Config.ID).
func newIdentity(cfg Config, conn *pgx.ConnConfig) (*identity, error) {
	if cfg.ID != "" {
		if err := CheckID(cfg.ID); err != nil {
			return nil, err
		}
	}
	if conn == nil {
		if cfg.ID != "" {
			return nil, fmt.Errorf("docket: relay ID %q needs a connection of its own to hold it: set ListenURL (or leave DisableNotify off with a *pgxpool.Pool)", cfg.ID)
		}
		return nil, nil
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "relay"
	}
	return &identity{conn: conn, schema: cfg.Schema, fixed: cfg.ID, host: host}, nil
}

// CheckID returns an error saying what is wrong when id cannot be a
// Config.ID: empty, longer than MaxIDLen bytes, not valid UTF-8, or
// holding a control character.
func CheckID(id string) error {
	if id == "" {
		return errors.New("docket: empty relay ID")
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("docket: relay ID longer than %d bytes", MaxIDLen)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("docket: relay ID %q is not valid UTF-8", id)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("docket: relay ID %q holds a control character", id)
		}
	}
	return nil
}

// rowID is the relay's id in docket_relays and docket_relay_parts.
func rowID(id string) uuid.UUID { return uuid.NewSHA1(idSpace, []byte(id)) }

// lockKey is the advisory lock key of id in schema.
func lockKey(schema, id string) int64 {
	h := fnv.New64a()
	h.Write([]byte("docket_relay\x00" + schema + "\x00" + id))
	return int64(h.Sum64())
}

// acquire connects and takes the relay's ID: Config.ID, waiting while
// another live relay holds it, or else the first free default. It retries
// a failed connection with backoff, and returns an error only when ctx ends.
func (r *Relay) acquire(ctx context.Context) (*session, error) {
	var backoff time.Duration
	for {
		s, err := r.ident.take(ctx, r.log)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		backoff = pgsql.NextBackoff(backoff, r.cfg.MinBackoff, r.cfg.MaxBackoff)
		r.log.Warn("docket: relay could not take its id; retrying", "err", err, "backoff", backoff)
		t := time.NewTimer(pgsql.Jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// take is one attempt of acquire.
func (id *identity) take(ctx context.Context, log *slog.Logger) (*session, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, id.conn.Copy())
	cancel()
	if err != nil {
		return nil, err
	}
	s := &session{conn: conn}
	ok := false
	defer func() {
		if !ok {
			closeConn(conn)
		}
	}()
	// A timeout set on the role would end the wait for a held ID.
	if _, err := conn.Exec(ctx, sqlSessionSettings); err != nil {
		return nil, err
	}
	try := func(name string) (bool, error) {
		var got bool
		err := conn.QueryRow(ctx, sqlTryHold, lockKey(id.schema, name)).Scan(&got)
		return got, err
	}
	if id.fixed != "" {
		s.id = id.fixed
		got, err := try(s.id)
		if err != nil {
			return nil, err
		}
		if !got {
			log.Warn("docket: relay id held by another live relay; waiting until it stops")
			if err := setAppName(ctx, conn, s.id+" (waiting)"); err != nil {
				return nil, err
			}
			if _, err := conn.Exec(ctx, sqlHold, lockKey(id.schema, s.id)); err != nil {
				return nil, err
			}
		}
	} else {
		for n := 1; ; n++ {
			s.id = id.host + "/" + id.schema + "/" + strconv.Itoa(n)
			got, err := try(s.id)
			if err != nil {
				return nil, err
			}
			if got {
				break
			}
		}
	}
	s.key = lockKey(id.schema, s.id)
	if err := setAppName(ctx, conn, s.id); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// setAppName names the session "docket relay " + what in pg_stat_activity.
func setAppName(ctx context.Context, conn *pgx.Conn, what string) error {
	_, err := conn.Exec(ctx, `SELECT set_config('application_name', $1, false)`, "docket relay "+what)
	return err
}

// watch checks every period that the session still holds its ID, each
// check bounded by period, and calls lost when it does not; then it
// returns. A check that finds the connection busy with a lease transaction
// is skipped: the relay publishes nothing meanwhile.
func (s *session) watch(ctx context.Context, period time.Duration, lost func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.mu.TryLock() {
			continue
		}
		held, err := s.check(ctx, period)
		s.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if err != nil || !held {
			lost()
			return
		}
	}
}

// check asks, on the session's connection, whether the session holds its
// ID's lock: a pooler between the relay and PostgreSQL, which would run it
// on another server session, makes it false.
func (s *session) check(ctx context.Context, timeout time.Duration) (bool, error) {
	if s.conn.IsClosed() {
		return false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var held bool
	k := uint64(s.key)
	err := s.conn.QueryRow(cctx, sqlHeld, int64(k>>32), int64(k&0xffffffff)).Scan(&held)
	return held, err
}

// close ends the session, which frees its ID. A live session frees it by
// a statement first: the server ends a closed connection's backend, and
// with it the lock, only some time after the close, and a relay started
// meanwhile would find the ID still held.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.conn.IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = s.conn.Exec(ctx, sqlRelease)
		cancel()
	}
	closeConn(s.conn)
}

// leaseDB runs the lease statements: the session's connection, or the
// relay's DB for a relay without an identity.
type leaseDB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// closeConn closes conn, waiting at most a second for the server.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

const (
	sqlSessionSettings = `SELECT set_config('statement_timeout', '0', false), set_config('lock_timeout', '0', false)`

	sqlTryHold = `SELECT pg_try_advisory_lock($1::bigint)`
	sqlHold    = `SELECT pg_advisory_lock($1::bigint)`
	// sqlRelease frees the session's ID, its only advisory lock.
	sqlRelease = `SELECT pg_advisory_unlock_all()`
	// sqlHeld: a bigint advisory lock shows in pg_locks as its high and
	// low 32 bits, objsubid 1.
	sqlHeld = `SELECT EXISTS (SELECT FROM pg_locks
	WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1)`
)
