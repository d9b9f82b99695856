package ent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/ent/entgen/job"
	"github.com/docketq/docket/ent/internal/testent"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

type trackShipment struct {
	ShipmentID int               `json:"shipment_id"`
	Carrier    string            `json:"carrier"`
	Address    map[string]string `json:"address,omitempty"`
}

func (trackShipment) Kind() string { return "test.track_shipment" }

// createWithJob creates a shipment and its tracking job in tx.
func createWithJob(ctx context.Context, b *bundle, tx *testent.Tx, tracking string) (docket.Enqueued, error) {
	s, err := tx.Shipment.Create().SetTracking(tracking).SetCarrier("ups").
		SetAddress(map[string]string{"city": "Lyon"}).Save(ctx)
	if err != nil {
		return docket.Enqueued{}, err
	}
	return docketent.Enqueue(ctx, b.dc, tx, trackShipment{ShipmentID: s.ID, Carrier: s.Carrier, Address: s.Address},
		docket.Opts{UniqueKey: fmt.Sprintf("track:%d", s.ID), Tenant: s.Carrier})
}

func TestEnqueueCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var res docket.Enqueued
	err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		var err error
		res, err = createWithJob(ctx, b, tx, "T1")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID == 0 || res.Duplicate {
		t.Fatalf("Enqueue = %+v, want a new job", res)
	}
	if n := b.count(t, "shipments", ""); n != 1 {
		t.Errorf("%d shipments, want 1", n)
	}
	// The job, read back through Docket's Ent models.
	j, err := b.docket.Job.Query().Where(job.Kind("test.track_shipment")).Only(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != res.ID || j.State != job.StateReady || j.Tenant != "ups" || j.UniqueKey == nil || *j.UniqueKey != fmt.Sprintf("track:%d", 1) {
		t.Errorf("job = %+v, enqueued %+v", j, res)
	}
	// The payload went through database/sql as JSON text: a jsonb object
	// (not a string, not bytea) that decodes back to the args.
	var typ string
	if err := b.pool.QueryRow(ctx, "SELECT jsonb_typeof(payload) FROM "+b.schema+".docket_jobs WHERE id = $1", res.ID).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "object" {
		t.Errorf("jsonb_typeof(payload) = %q, want object", typ)
	}
	var got trackShipment
	if err := json.Unmarshal(j.Payload, &got); err != nil {
		t.Fatal(err)
	}
	if got.ShipmentID != 1 || got.Carrier != "ups" || got.Address["city"] != "Lyon" {
		t.Errorf("payload round trip = %+v", got)
	}
	// And the domain row's own jsonb column round-trips through Ent.
	s, err := b.ent.Shipment.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Address["city"] != "Lyon" {
		t.Errorf("address = %v", s.Address)
	}
}

func TestEnqueueRollback(t *testing.T) {
	t.Parallel()
	errLater := errors.New("a later step failed")
	cases := []struct {
		name string
		run  func(ctx context.Context, b *bundle) error
	}{
		{"explicit rollback", func(ctx context.Context, b *bundle) error {
			tx, err := b.ent.Tx(ctx)
			if err != nil {
				return err
			}
			if _, err := createWithJob(ctx, b, tx, "T1"); err != nil {
				return err
			}
			return tx.Rollback()
		}},
		{"fn returns an error", func(ctx context.Context, b *bundle) error {
			err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
				if _, err := createWithJob(ctx, b, tx, "T1"); err != nil {
					return err
				}
				return errLater
			})
			if !errors.Is(err, errLater) {
				return fmt.Errorf("WithTx = %v, want %v", err, errLater)
			}
			return nil
		}},
		{"a later statement fails", func(ctx context.Context, b *bundle) error {
			err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
				if _, err := createWithJob(ctx, b, tx, "T1"); err != nil {
					return err
				}
				// The tracking number is unique: this insert fails.
				_, err := tx.Shipment.Create().SetTracking("T1").SetCarrier("dhl").Save(ctx)
				return err
			})
			if !testent.IsConstraintError(err) {
				return fmt.Errorf("WithTx = %v, want a constraint error", err)
			}
			return nil
		}},
		{"panic inside the tx", func(ctx context.Context, b *bundle) (err error) {
			defer func() {
				if r := recover(); r != "boom" {
					err = fmt.Errorf("recovered %v, want boom", r)
				}
			}()
			_ = docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
				if _, err := createWithJob(ctx, b, tx, "T1"); err != nil {
					return err
				}
				panic("boom")
			})
			return errors.New("WithTx returned instead of panicking")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if err := tc.run(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			if n := b.count(t, "shipments", ""); n != 0 {
				t.Errorf("%d shipments after rollback, want 0", n)
			}
			if n := b.count(t, "docket_jobs", ""); n != 0 {
				t.Errorf("%d jobs after rollback, want 0", n)
			}
			// Nothing is left holding a connection: the pool serves pgx.
			if err := b.pool.Ping(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestUniqueKey checks that a unique key behaves through Ent exactly as
// through pgx: in the same transaction, in a later one, and across the two
// paths, a duplicate inserts nothing and reports the existing id.
func TestUniqueKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	args := trackShipment{ShipmentID: 7, Carrier: "ups"}
	opts := docket.Opts{UniqueKey: "track:7"}
	var first, again docket.Enqueued
	err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		var err error
		if first, err = docketent.Enqueue(ctx, b.dc, tx, args, opts); err != nil {
			return err
		}
		again, err = docketent.Enqueue(ctx, b.dc, tx, args, opts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !again.Duplicate || again.ID != first.ID {
		t.Fatalf("same tx: first %+v, again %+v", first, again)
	}
	var later docket.Enqueued
	err = docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		var err error
		later, err = docketent.Enqueue(ctx, b.dc, tx, args, opts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	viaPgx, err := b.dc.Enqueue(ctx, b.pool, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := docket.Enqueued{ID: first.ID, Duplicate: true, State: first.State}
	if later != want || viaPgx != want {
		t.Errorf("later tx via Ent = %+v, via pgx = %+v, want %+v", later, viaPgx, want)
	}
	// And the other way round: a key taken through pgx is a duplicate through Ent.
	pgxFirst, err := b.dc.Enqueue(ctx, b.pool, args, docket.Opts{UniqueKey: "track:8"})
	if err != nil {
		t.Fatal(err)
	}
	var entDup docket.Enqueued
	err = docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		var err error
		entDup, err = docketent.Enqueue(ctx, b.dc, tx, args, docket.Opts{UniqueKey: "track:8"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !entDup.Duplicate || entDup.ID != pgxFirst.ID {
		t.Errorf("Ent after pgx = %+v, pgx inserted %+v", entDup, pgxFirst)
	}
	if n := b.count(t, "docket_jobs", ""); n != 2 {
		t.Errorf("%d jobs, want 2", n)
	}
	// Duplicates inside a bulk enqueue through Ent.
	var many []docket.Enqueued
	err = docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		var err error
		many, err = docketent.EnqueueMany(ctx, b.dc, tx, []docket.Item{
			{Args: args, Opts: opts},
			{Args: args, Opts: docket.Opts{UniqueKey: "track:9"}},
			{Args: args},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(many) != 3 || !many[0].Duplicate || many[0].ID != first.ID || many[1].Duplicate || many[2].Duplicate {
		t.Errorf("EnqueueMany = %+v", many)
	}
	if n := b.count(t, "docket_jobs", "jsonb_typeof(payload) = 'object'"); n != 4 {
		t.Errorf("%d jobs with an object payload, want 4", n)
	}
}

func TestEnqueueNilTx(t *testing.T) {
	t.Parallel()
	dc, err := docket.NewClient(pgtest.Pool(t), docket.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := docketent.Enqueue(t.Context(), dc, nil, trackShipment{}, docket.Opts{}); !errors.Is(err, docketent.ErrNilTx) {
		t.Errorf("Enqueue(nil tx) = %v, want ErrNilTx", err)
	}
	if _, err := docketent.EnqueueMany(t.Context(), dc, nil, nil); !errors.Is(err, docketent.ErrNilTx) {
		t.Errorf("EnqueueMany(nil tx) = %v, want ErrNilTx", err)
	}
}

// rawPayload is a job whose payload holds JSON text as given.
type rawPayload struct {
	P json.RawMessage `json:"p"`
}

func (rawPayload) Kind() string { return "test.raw" }

// A job PostgreSQL could not store is refused by the same checks as
// docket.Client.Enqueue, before anything is sent, so the Ent transaction
// stays usable and commits its own rows.
func TestEnqueueInvalidKeepsTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	bad := []docket.Item{
		{Args: rawPayload{P: json.RawMessage(`"\ud800"`)}},
		{Args: rawPayload{P: json.RawMessage(`{"total":1e131072}`)}},
		{Args: trackShipment{}, Opts: docket.Opts{Meta: map[string]string{"trace": "a\x00"}}},
		{Args: trackShipment{}, Opts: docket.Opts{SerialKey: "s\xff"}},
	}
	err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		if _, err := tx.Shipment.Create().SetTracking("T1").SetCarrier("ups").Save(ctx); err != nil {
			return err
		}
		for i, it := range bad {
			if _, err := docketent.Enqueue(ctx, b.dc, tx, it.Args, it.Opts); !errors.Is(err, docket.ErrInvalidJob) {
				return fmt.Errorf("Enqueue of bad job %d = %v, want ErrInvalidJob", i, err)
			}
			if _, err := docketent.EnqueueMany(ctx, b.dc, tx, []docket.Item{{Args: trackShipment{}}, it}); !errors.Is(err, docket.ErrInvalidJob) {
				return fmt.Errorf("EnqueueMany with bad job %d = %v, want ErrInvalidJob", i, err)
			}
		}
		_, err := tx.Shipment.Create().SetTracking("T2").SetCarrier("ups").Save(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "shipments", ""); n != 2 {
		t.Errorf("%d shipments, want 2", n)
	}
	if n := b.count(t, "docket_jobs", ""); n != 0 {
		t.Errorf("%d jobs, want 0", n)
	}
}
