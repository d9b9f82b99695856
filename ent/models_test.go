package ent_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/ent/entgen/deadjob"
	"github.com/docketq/docket/ent/entgen/donejob"
	"github.com/docketq/docket/ent/entgen/job"
	"github.com/docketq/docket/ent/entgen/schedule"
	"github.com/docketq/docket/ent/internal/testent"
	"github.com/docketq/docket/handlers"
)

type failing struct{}

func (failing) Kind() string { return "test.failing" }

// TestSharedPoolAndModels runs jobs enqueued through Ent with a worker on
// the same pgx pool that serves the Ent client, then reads the outcome with
// Docket's Ent models: history, dead letters and schedules.
func TestSharedPoolAndModels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	reg := handlers.NewRegistry()
	ran := make(chan int, 1)
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[trackShipment]) error {
		ran <- j.Args.ShipmentID
		return nil
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[failing]) error {
		return handlers.Cancel(errors.New("carrier rejected the label"))
	}, handlers.KindOpts{})
	dc, err := docket.NewClient(b.pool, docket.Config{Schema: b.schema, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}

	var res docket.Enqueued
	err = docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		var err error
		if res, err = createWithJob(ctx, b, tx, "T1"); err != nil {
			return err
		}
		// A client with a Registry is an Enqueuer too.
		_, err = docketent.Enqueue(ctx, dc, tx, failing{}, docket.Opts{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := docket.NewClient(b.pool, docket.Config{
		Schema: b.schema, Registry: reg,
		Worker: docket.WorkerConfig{
			PollInterval: 50 * time.Millisecond,
			Pools:        []docket.PoolConfig{{Queues: []string{"default"}, Concurrency: 2}},
			Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	select {
	case id := <-ran:
		if id != 1 {
			t.Errorf("handler got shipment %d, want 1", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tracking job did not run")
	}
	// Wait for both outcomes to be written, reading through Ent.
	deadline := time.Now().Add(10 * time.Second)
	for {
		live, err := b.docket.Job.Query().Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still live", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
	done, err := b.docket.DoneJob.Query().Where(donejob.Kind(trackShipment{}.Kind())).Only(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if done.ID != res.ID || done.Attempts != 1 || done.StartedAt == nil || done.FinishedAt.IsZero() || done.Tenant != "ups" {
		t.Errorf("history row = %+v", done)
	}
	dead, err := b.docket.DeadJob.Query().Where(deadjob.Kind(failing{}.Kind())).Only(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dead.Reason == "" || dead.LastError == nil {
		t.Errorf("dead row = %+v", dead)
	}
	// Typed predicates over the enum and partial-index columns compile to
	// the SQL Docket's indexes serve.
	if n, err := b.docket.Job.Query().Where(job.StateEQ(job.StateReady), job.Queue("default")).Count(ctx); err != nil || n != 0 {
		t.Errorf("ready jobs = %d, %v", n, err)
	}

	// Schedules read through Ent.
	_, err = b.pool.Exec(ctx, `INSERT INTO `+b.schema+`.docket_schedules (name, spec, kind, queue, payload, misfire)
		VALUES ('nightly', '0 2 * * *', 'report', 'default', '{"a": 1}', 'run_once')`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.docket.Schedule.Query().Where(schedule.ID("nightly")).Only(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec != "0 2 * * *" || s.Misfire != schedule.MisfireRunOnce || string(s.Payload) != `{"a": 1}` || s.NextFire != nil {
		t.Errorf("schedule = %+v", s)
	}
}
