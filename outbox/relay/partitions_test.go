package relay_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Events written while their day's partition did not exist wait in the
// default partition; the relay's maintenance moves them into the day's
// partition when it creates it. No reader may miss them meanwhile: a
// statement planned before the move committed and run after it would read
// the default partition emptied and not the new one, so EventStatus
// reported no pending event, and a relay's fetch or mark could miss them.
func TestPartitionMoveHidesNoEvent(t *testing.T) {
	b := setup(t)
	const perDay, days = 300, 4
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 10)
	for d := range days {
		if _, err := b.pool.Exec(b.ctx, `INSERT INTO `+pgx.Identifier{b.schema, "docket_events"}.Sanitize()+` (id, topic, payload, part, created_at)
			SELECT nextval('`+b.schema+`.docket_events_id_seq'), 'moved', '\x00'::bytea, g % 64, $1::timestamptz + g * interval '1 second'
			FROM generate_series(1, $2) g`, first.AddDate(0, 0, d), perDay); err != nil {
			t.Fatal(err)
		}
	}
	const total = perDay * days

	var (
		low   atomic.Int64
		reads atomic.Int64
		wg    sync.WaitGroup
	)
	low.Store(total)
	stop := make(chan struct{})
	// Half the readers plan each statement anew (the simple protocol), as
	// psql and most tools do; the others run a prepared statement.
	simpleCfg := b.pool.Config().Copy()
	simpleCfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	simple, err := pgxpool.NewWithConfig(b.ctx, simpleCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer simple.Close()
	for i := range 4 {
		db := b.pool
		if i%2 == 0 {
			db = simple
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := b.client.EventStatus(context.Background(), db)
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				for {
					l := low.Load()
					if s.Pending >= l || low.CompareAndSwap(l, s.Pending) {
						break
					}
				}
			}
		}()
	}
	for d := range days {
		time.Sleep(20 * time.Millisecond) // readers planning and reading
		if _, err := b.pool.Exec(b.ctx, `SELECT `+pgx.Identifier{b.schema}.Sanitize()+`.docket_create_event_partition($1::date)`,
			first.AddDate(0, 0, d).Format(time.DateOnly)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	if reads.Load() < 10 {
		t.Fatalf("only %d reads of the status beside the moves", reads.Load())
	}
	if l := low.Load(); l != total {
		t.Errorf("EventStatus reported %d pending events while the partitions were made, want %d throughout (%d reads)", l, total, reads.Load())
	}
	var moved int64
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM `+pgx.Identifier{b.schema, "docket_events"}.Sanitize()+
		` WHERE tableoid <> '`+b.schema+`.docket_events_default'::regclass`).Scan(&moved); err != nil {
		t.Fatal(err)
	}
	if moved != total {
		t.Errorf("%d events in their day's partitions, want %d", moved, total)
	}
}
