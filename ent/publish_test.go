package ent_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/ent/internal/testent"
	"github.com/docketq/docket/ent/internal/testent/hook"
	"github.com/docketq/docket/outbox"
)

// shippedHook publishes a ShipmentCreated event keyed by the carrier.
func shippedHook(b *bundle) testent.Hook {
	return hook.On(docketent.PublishHook(b.ob, func(ctx context.Context, m *testent.ShipmentMutation, v testent.Value) ([]outbox.Message, error) {
		s := v.(*testent.Shipment)
		return []outbox.Message{{Topic: "shipments.created", Key: s.Carrier, Payload: []byte(strconv.Itoa(s.ID))}}, nil
	}), testent.OpCreate)
}

// TestPublishHook: the event commits and rolls back with the mutation, and
// outside a transaction neither is written.
func TestPublishHook(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.ent.Shipment.Use(shippedHook(b))
			ctx := t.Context()
			tx, err := b.ent.Tx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Shipment.Create().SetTracking("T1").SetCarrier("dhl").Save(ctx); err != nil {
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
			if n := b.count(t, "docket_events", "topic = 'shipments.created' AND key = 'dhl' AND seq = 1"); n != want {
				t.Errorf("%d events, want %d", n, want)
			}
		})
	}
	t.Run("outside tx", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.ent.Shipment.Use(shippedHook(b))
		_, err := b.ent.Shipment.Create().SetTracking("T1").SetCarrier("dhl").Save(t.Context())
		if !errors.Is(err, docketent.ErrNoTx) {
			t.Fatalf("create outside tx = %v, want ErrNoTx", err)
		}
		if n := b.count(t, "shipments", ""); n != 0 {
			t.Errorf("%d shipments, want 0", n)
		}
		if n := b.count(t, "docket_events", ""); n != 0 {
			t.Errorf("%d events, want 0", n)
		}
	})
	t.Run("helper", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		err := docketent.WithTx(t.Context(), b.ent, func(tx *testent.Tx) error {
			_, err := docketent.Publish(t.Context(), b.ob, tx, outbox.Message{Topic: "t"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := docketent.Publish(t.Context(), b.ob, nil, outbox.Message{Topic: "t"}); !errors.Is(err, docketent.ErrNilTx) {
			t.Fatalf("nil tx: %v", err)
		}
		if n := b.count(t, "docket_events", ""); n != 1 {
			t.Errorf("%d events, want 1", n)
		}
	})
}
