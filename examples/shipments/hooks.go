package main

import (
	"context"

	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/examples/shipments/ent"
	"github.com/docketq/docket/examples/shipments/ent/hook"
	"github.com/docketq/docket/outbox"
)

// notifyOnCreate enqueues a customer notification whenever a shipment is
// created, in the mutation's transaction. A shipment created outside a
// transaction fails with docketent.ErrNoTx and is not written.
func notifyOnCreate(docket docketent.Enqueuer) ent.Hook {
	h := docketent.Hook(docket, func(ctx context.Context, m *ent.ShipmentMutation, v ent.Value) ([]outbox.Item, error) {
		sh := v.(*ent.Shipment)
		t, err := m.Client().Tenant.Get(ctx, tenantID(m))
		if err != nil {
			return nil, err
		}
		return []outbox.Item{{
			Args: NotifyCustomer{ShipmentID: sh.ID, Tenant: t.Name},
			Opts: outbox.Opts{Tenant: sh.Carrier},
		}}, nil
	})
	return hook.On(h, ent.OpCreate)
}

func tenantID(m *ent.ShipmentMutation) int {
	id, _ := m.TenantID() // required edge: Ent rejects a shipment without one
	return id
}
