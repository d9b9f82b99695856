package faultsuite

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
)

// Jobs a stopped worker left running under a lease are finished by the
// worker recoverLeased starts once that lease has ended: none is left
// running or in the table, each is done once.
func TestRecoverLeasedFinishesJobsLeftRunning(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := pgtest.Schema(t)
	db := pgtest.PoolN(t, 4)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := CreateTables(ctx, db, schema); err != nil {
		t.Fatal(err)
	}
	client, err := docket.NewClient(db, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	enq := &Enqueuer{DB: db, Client: client, Schema: schema}
	if err := enq.Enqueue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	// A worker that is gone holds them for another second.
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := q.Claim(ctx, db, queue.ClaimParams{Worker: uuid.New(), Queues: []string{docket.DefaultQueue},
		Kinds: []string{KindPlain, KindTx}, Limit: 10, Lease: time.Second})
	if err != nil || len(claimed) != 10 {
		t.Fatalf("claimed %d of 10: %v", len(claimed), err)
	}
	s := &soak{cfg: SoakConfig{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }, Concurrency: 4},
		db: db, schema: schema, urls: []string{pgtest.URL(t)}}
	if err := s.recoverLeased(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := Check(ctx, db, schema)
	if err != nil {
		t.Fatal(err)
	}
	if c.Running != 0 || c.Left != 0 || c.Done != 10 || c.FinishedIDs != 10 {
		t.Errorf("after recovery: %d running, %d left, %d done (%d distinct); want 0, 0 and 10 once each",
			c.Running, c.Left, c.Done, c.FinishedIDs)
	}
	if len(s.started) != 1 {
		t.Errorf("%d recovering workers started, want 1", len(s.started))
	}
}
