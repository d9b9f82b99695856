package ent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/ent/internal/testent"
	"github.com/docketq/docket/ent/internal/testent/hook"
)

// trackingHook enqueues a tracking job keyed by the shipment id whenever a
// shipment is created.
func trackingHook(b *bundle) testent.Hook {
	return hook.On(docketent.Hook(b.dc, func(ctx context.Context, m *testent.ShipmentMutation, v testent.Value) ([]docket.Item, error) {
		s := v.(*testent.Shipment)
		return []docket.Item{{
			Args: trackShipment{ShipmentID: s.ID, Carrier: s.Carrier},
			Opts: docket.Opts{UniqueKey: fmt.Sprintf("track:%d", s.ID), Tenant: s.Carrier},
		}}, nil
	}), testent.OpCreate)
}

func TestHookInTx(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.ent.Shipment.Use(trackingHook(b))
			ctx := t.Context()
			tx, err := b.ent.Tx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s, err := tx.Shipment.Create().SetTracking("T1").SetCarrier("dhl").Save(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Updates are not filtered in: no second job.
			if _, err := tx.Shipment.UpdateOne(s).SetCarrier("ups").Save(ctx); err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if commit {
				want = 1
			}
			if n := b.count(t, "shipments", ""); n != want {
				t.Errorf("%d shipments, want %d", n, want)
			}
			if n := b.count(t, "docket_jobs", "kind = $1 AND unique_key = $2 AND tenant = 'dhl'", trackShipment{}.Kind(), fmt.Sprintf("track:%d", s.ID)); n != want {
				t.Errorf("%d tracking jobs, want %d", n, want)
			}
		})
	}
}

// TestHookOutsideTx checks the documented behaviour: outside a transaction
// the mutation fails with ErrNoTx before anything is written.
func TestHookOutsideTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ent.Shipment.Use(trackingHook(b))
	ctx := t.Context()
	_, err := b.ent.Shipment.Create().SetTracking("T1").SetCarrier("dhl").Save(ctx)
	if !errors.Is(err, docketent.ErrNoTx) {
		t.Fatalf("create outside tx = %v, want ErrNoTx", err)
	}
	if !strings.Contains(err.Error(), "OpCreate Shipment") {
		t.Errorf("error %q does not name the operation and type", err)
	}
	if n := b.count(t, "shipments", ""); n != 0 {
		t.Errorf("%d shipments, want 0", n)
	}
	if n := b.count(t, "docket_jobs", ""); n != 0 {
		t.Errorf("%d jobs, want 0", n)
	}
	// Mutations the hook is not filtered to still run outside a tx.
	if err := b.ent.Shipment.Update().SetCarrier("x").Exec(ctx); err != nil {
		t.Errorf("update outside tx = %v", err)
	}
}

// TestHookEnqueueFails checks that a job the hook cannot enqueue fails the
// mutation, and that rolling back leaves neither row.
func TestHookEnqueueFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ent.Shipment.Use(docketent.Hook(b.dc, func(ctx context.Context, m *testent.ShipmentMutation, v testent.Value) ([]docket.Item, error) {
		return []docket.Item{{Args: trackShipment{}, Opts: docket.Opts{Priority: 99}}}, nil
	}))
	ctx := t.Context()
	err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		_, err := tx.Shipment.Create().SetTracking("T1").SetCarrier("dhl").Save(ctx)
		return err
	})
	if !errors.Is(err, docket.ErrInvalidJob) {
		t.Fatalf("WithTx = %v, want ErrInvalidJob", err)
	}
	if n := b.count(t, "shipments", ""); n != 0 {
		t.Errorf("%d shipments, want 0", n)
	}
}
