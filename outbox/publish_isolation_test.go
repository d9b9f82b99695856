package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// isoLevels are the isolation levels a caller's transaction may run at.
var isoLevels = []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable}

// retryable is what a generic retry loop looks for: SQLSTATE 40001.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// TestPublishKeyedUnderIsolationLevels: a keyed publish in a transaction
// whose snapshot is older than another transaction's publish of the same
// key (committed before, or in flight and committed while it waits) works
// at READ COMMITTED, and at REPEATABLE READ and SERIALIZABLE fails with an
// ErrSerialization error that a generic retry loop still recognises by
// SQLSTATE 40001. Retried, the event gets the next seq, and a relay delivers
// every key's events in commit order.
func TestPublishKeyedUnderIsolationLevels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sqlDB := sql.OpenDB(stdlib.GetPoolConnector(b.pool))
	defer sqlDB.Close()

	// A snapshot func runs query in the transaction to take its snapshot,
	// and may then let another transaction publish.
	type snapshotFunc = func(query func(string) error) error
	// publishers are the three entry points, each in the caller's
	// transaction at level; they return the one event's id.
	type publisher struct {
		name string
		run  func(ctx context.Context, level pgx.TxIsoLevel, key string, snapshot snapshotFunc) (int64, error)
	}
	// inTx begins a pgx transaction at level, lets snapshot take its
	// snapshot, publishes through do and commits.
	inTx := func(ctx context.Context, level pgx.TxIsoLevel, snapshot snapshotFunc, do func(pgx.Tx) (outbox.Published, error)) (int64, error) {
		tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
		if err != nil {
			return 0, err
		}
		defer tx.Rollback(ctx)
		if err := snapshot(func(q string) error { _, err := tx.Exec(ctx, q); return err }); err != nil {
			return 0, err
		}
		p, err := do(tx)
		if err != nil {
			return 0, err
		}
		return p.ID, tx.Commit(ctx)
	}
	publishers := []publisher{
		{"Publish", func(ctx context.Context, level pgx.TxIsoLevel, key string, snapshot snapshotFunc) (int64, error) {
			return inTx(ctx, level, snapshot, func(tx pgx.Tx) (outbox.Published, error) {
				return b.client.Publish(ctx, tx, outbox.Message{Topic: "t", Key: key})
			})
		}},
		{"PublishMany", func(ctx context.Context, level pgx.TxIsoLevel, key string, snapshot snapshotFunc) (int64, error) {
			return inTx(ctx, level, snapshot, func(tx pgx.Tx) (outbox.Published, error) {
				ps, err := b.client.PublishMany(ctx, tx, []outbox.Message{{Topic: "t", Key: key}})
				if err != nil {
					return outbox.Published{}, err
				}
				return ps[0], nil
			})
		}},
		{"PublishSQL", func(ctx context.Context, level pgx.TxIsoLevel, key string, snapshot snapshotFunc) (int64, error) {
			sqlLevel := map[pgx.TxIsoLevel]sql.IsolationLevel{pgx.ReadCommitted: sql.LevelReadCommitted,
				pgx.RepeatableRead: sql.LevelRepeatableRead, pgx.Serializable: sql.LevelSerializable}[level]
			tx, err := sqlDB.BeginTx(ctx, &sql.TxOptions{Isolation: sqlLevel})
			if err != nil {
				return 0, err
			}
			defer tx.Rollback()
			if err := snapshot(func(q string) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
				return 0, err
			}
			p, err := b.client.PublishSQL(ctx, tx, outbox.Message{Topic: "t", Key: key})
			if err != nil {
				return 0, err
			}
			return p.ID, tx.Commit()
		}},
	}
	takeSnapshot := `SELECT count(*) FROM "` + b.schema + `".docket_event_keys`

	// order holds each key's event ids in commit order.
	order := map[string][]int64{}
	for _, level := range isoLevels {
		for _, p := range publishers {
			for _, inFlight := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/in-flight=%v", level, p.name, inFlight)
				key := name
				t.Run(name, func(t *testing.T) {
					ctx := b.ctx
					var first int64 // the other transaction's event, committed first
					// The snapshot is taken; then the other transaction
					// publishes the key: committed at once, or left in flight
					// until this one waits for its key's lock.
					snapshot := func(query func(string) error) error {
						if err := query(takeSnapshot); err != nil {
							return err
						}
						if !inFlight {
							pub, err := b.client.Publish(ctx, b.pool, outbox.Message{Topic: "t", Key: key})
							first = pub.ID
							return err
						}
						other, err := b.pool.Begin(ctx)
						if err != nil {
							return err
						}
						pub, err := b.client.Publish(ctx, other, outbox.Message{Topic: "t", Key: key})
						if err != nil {
							other.Rollback(ctx)
							return err
						}
						first = pub.ID
						go func() {
							// Commit once this transaction's publish waits
							// for the key's lock.
							if err := waitBlocked(ctx, b, other.Conn().PgConn().PID()); err != nil {
								t.Error(err)
							}
							if err := other.Commit(ctx); err != nil {
								t.Error(err)
							}
						}()
						return nil
					}
					id, err := p.run(ctx, level, key, snapshot)
					switch {
					case level == pgx.ReadCommitted && err != nil:
						t.Fatalf("at read committed: %v", err)
					case level != pgx.ReadCommitted && !errors.Is(err, outbox.ErrSerialization):
						t.Fatalf("got %v, want ErrSerialization", err)
					case level != pgx.ReadCommitted && !retryable(err):
						t.Fatalf("%v: not recognisable as SQLSTATE 40001", err)
					}
					// A generic retry loop runs the transaction again.
					for attempt := 1; err != nil; attempt++ {
						if !retryable(err) || attempt > 3 {
							t.Fatalf("attempt %d: %v", attempt, err)
						}
						id, err = p.run(ctx, level, key, func(query func(string) error) error { return query(takeSnapshot) })
					}
					var seqs []int64
					rows, err := b.pool.Query(ctx, `SELECT seq FROM "`+b.schema+`".docket_events WHERE key = $1 ORDER BY id`, key)
					if err == nil {
						seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
					}
					if err != nil || len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 || id <= first {
						t.Fatalf("key's events %v (%v), ids %d then %d; want seqs 1, 2 in id order", seqs, err, first, id)
					}
					order[key] = []int64{first, id}
				})
			}
		}
	}

	// A relay delivers each key's two events in commit order.
	rec := &recorder{}
	r, err := relay.New(b.pool, relay.Config{Schema: b.schema, Publisher: rec, LeaseTTL: time.Second,
		PollInterval: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background())
	want := 0
	for _, ids := range order {
		want += len(ids)
	}
	waitFor(t, func() bool { return len(rec.delivered()) >= want })
	got := map[string][]int64{}
	for _, m := range rec.delivered() {
		id, _ := strconv.ParseInt(m.ID, 10, 64)
		got[m.Key] = append(got[m.Key], id)
		if m.Headers[relay.HeaderSeq] != strconv.Itoa(len(got[m.Key])) {
			t.Errorf("key %s: event %d delivered with seq %s, want %d", m.Key, id, m.Headers[relay.HeaderSeq], len(got[m.Key]))
		}
	}
	for key, ids := range order {
		if fmt.Sprint(got[key]) != fmt.Sprint(ids) {
			t.Errorf("key %s: delivered %v, want %v (commit order)", key, got[key], ids)
		}
	}
}

// waitBlocked waits up to 10 s until a session waits for a lock that
// backend pid holds.
func waitBlocked(ctx context.Context, b *bundle, pid uint32) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var blocked bool
		err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)))`, pid).Scan(&blocked)
		switch {
		case err != nil:
			return err
		case blocked:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("no session waited for backend %d within 10s", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder is a Publisher that acknowledges everything and records it.
type recorder struct {
	mu  sync.Mutex
	got []relay.Message
}

func (r *recorder) Publish(_ context.Context, msgs []relay.Message) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, msgs...)
	return make([]error, len(msgs))
}

func (r *recorder) Close() error { return nil }

func (r *recorder) delivered() []relay.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]relay.Message(nil), r.got...)
}
