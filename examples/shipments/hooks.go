package main

import (
	"context"

	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/examples/shipments/ent"
	"github.com/docketq/docket/examples/shipments/ent/hook"
)

// notifyOnCreate enqueues a customer notification whenever a shipment is
// created, in the mutation's transaction. A shipment created outside a
// transaction fails with docketent.ErrNoTx and is not written.
func notifyOnCreate(enq docketent.Enqueuer) ent.Hook {
	h := docketent.Hook(enq, func(ctx context.Context, m *ent.ShipmentMutation, v ent.Value) ([]docket.Item, error) {
		sh := v.(*ent.Shipment)
		t, err := m.Client().Tenant.Get(ctx, tenantID(m))
		if err != nil {
			return nil, err
		}
		return []docket.Item{{
			Args: NotifyCustomer{ShipmentID: sh.ID, Tenant: t.Name},
			Opts: docket.Opts{Tenant: sh.Carrier},
		}}, nil
	})
	return hook.On(h, ent.OpCreate)
}

func tenantID(m *ent.ShipmentMutation) int {
	id, _ := m.TenantID() // required edge: Ent rejects a shipment without one
	return id
}
