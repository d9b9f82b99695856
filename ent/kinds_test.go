package ent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/ent/internal/testent"
	"github.com/docketq/docket/ent/internal/testent/hook"
	"github.com/docketq/docket/handlers"
)

type unregistered struct{}

func (unregistered) Kind() string { return "test.unregistered" }

// withKinds returns a client on b's schema whose Registry holds
// trackShipment with its own defaults.
func withKinds(t *testing.T, b *bundle) *docket.Client {
	t.Helper()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[trackShipment]) error { return nil },
		handlers.KindOpts{Queue: "tracking", Priority: 4, MaxAttempts: 6})
	dc, err := docket.NewClient(b.pool, docket.Config{Schema: b.schema, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// withDefaults counts the jobs of trackShipment stored with its kind's
// registered queue, priority and max attempts.
func withDefaults(t *testing.T, b *bundle) int {
	t.Helper()
	return b.count(t, "docket_jobs", "kind = $1 AND queue = 'tracking' AND priority = 4 AND max_attempts = 6", trackShipment{}.Kind())
}

// Enqueue and EnqueueMany through Ent apply the kind's registered defaults
// and reject an unknown kind, writing nothing for it and leaving the Ent
// transaction usable.
func TestEnqueueKindDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dc := withKinds(t, b)
	ctx := t.Context()
	err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		if _, err := docketent.Enqueue(ctx, dc, tx, trackShipment{ShipmentID: 1}, docket.Opts{}); err != nil {
			return err
		}
		if _, err := docketent.EnqueueMany(ctx, dc, tx, []docket.Item{{Args: trackShipment{ShipmentID: 2}}}); err != nil {
			return err
		}
		if _, err := docketent.Enqueue(ctx, dc, tx, unregistered{}, docket.Opts{}); !errors.Is(err, docket.ErrUnknownKind) {
			return fmt.Errorf("Enqueue of an unknown kind: %v, want ErrUnknownKind", err)
		}
		items := []docket.Item{{Args: trackShipment{ShipmentID: 3}}, {Args: unregistered{}}}
		if _, err := docketent.EnqueueMany(ctx, dc, tx, items); !errors.Is(err, docket.ErrUnknownKind) {
			return fmt.Errorf("EnqueueMany with an unknown kind: %v, want ErrUnknownKind", err)
		}
		// The transaction is still usable after the rejections.
		return tx.Shipment.Create().SetTracking("T1").SetCarrier("ups").Exec(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := withDefaults(t, b); n != 2 {
		t.Errorf("%d jobs with the kind's defaults, want 2", n)
	}
	if n := b.count(t, "docket_jobs", ""); n != 2 {
		t.Errorf("%d jobs in all, want 2: a rejected call wrote something", n)
	}
	if n := b.count(t, "shipments", ""); n != 1 {
		t.Errorf("%d shipments, want 1", n)
	}
}

// Hook applies the kind's defaults; a hook enqueuing an unknown kind fails
// the mutation, and nothing of it is written.
func TestHookKindDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dc := withKinds(t, b)
	ctx := t.Context()
	b.ent.Shipment.Use(hook.On(docketent.Hook(dc, func(ctx context.Context, m *testent.ShipmentMutation, v testent.Value) ([]docket.Item, error) {
		s := v.(*testent.Shipment)
		if s.Carrier == "nobody" {
			return []docket.Item{{Args: unregistered{}}}, nil
		}
		return []docket.Item{{Args: trackShipment{ShipmentID: s.ID}}}, nil
	}), testent.OpCreate))

	err := docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		return tx.Shipment.Create().SetTracking("T1").SetCarrier("ups").Exec(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = docketent.WithTx(ctx, b.ent, func(tx *testent.Tx) error {
		return tx.Shipment.Create().SetTracking("T2").SetCarrier("nobody").Exec(ctx)
	})
	if !errors.Is(err, docket.ErrUnknownKind) {
		t.Errorf("hook enqueuing an unknown kind: %v, want ErrUnknownKind", err)
	}
	if n := withDefaults(t, b); n != 1 {
		t.Errorf("%d jobs with the kind's defaults, want 1", n)
	}
	if n := b.count(t, "docket_jobs", ""); n != 1 {
		t.Errorf("%d jobs in all, want 1", n)
	}
	if n := b.count(t, "shipments", ""); n != 1 {
		t.Errorf("%d shipments, want 1: the failed mutation's row was kept", n)
	}
}
