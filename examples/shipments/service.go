package main

import (
	"context"
	"fmt"

	"github.com/docketq/docket"
	docketent "github.com/docketq/docket/ent"
	"github.com/docketq/docket/examples/shipments/ent"
	"github.com/docketq/docket/examples/shipments/ent/tenant"
)

// Service creates shipments.
type Service struct {
	client *ent.Client
	docket docketent.Enqueuer
}

// CreateShipment creates a shipment for tenantName and enqueues its tracking
// job in one Ent transaction: both are committed or neither is. The
// notification job is added by the hook on Shipment, in the same
// transaction. The tracking job's unique key makes a retried call harmless.
func (s *Service) CreateShipment(ctx context.Context, tenantName, carrier string, address map[string]string) (*ent.Shipment, docket.Enqueued, error) {
	var sh *ent.Shipment
	var job docket.Enqueued
	err := docketent.WithTx(ctx, s.client, func(tx *ent.Tx) error {
		t, err := tx.Tenant.Query().Where(tenant.Name(tenantName)).Only(ctx)
		if err != nil {
			return fmt.Errorf("tenant %s: %w", tenantName, err)
		}
		sh, err = tx.Shipment.Create().SetTenant(t).SetCarrier(carrier).SetAddress(address).Save(ctx)
		if err != nil {
			return err
		}
		job, err = s.enqueueTracking(ctx, tx, sh)
		return err
	})
	return sh, job, err
}

func (s *Service) enqueueTracking(ctx context.Context, tx *ent.Tx, sh *ent.Shipment) (docket.Enqueued, error) {
	return docketent.Enqueue(ctx, s.docket, tx, TrackShipment{ShipmentID: sh.ID, Carrier: sh.Carrier},
		docket.Opts{UniqueKey: fmt.Sprintf("track:%d", sh.ID), Tenant: sh.Carrier})
}

// Retrack enqueues a shipment's tracking job again: while the first is in
// flight, nothing is inserted and its id is reported.
func (s *Service) Retrack(ctx context.Context, id int) (docket.Enqueued, error) {
	var job docket.Enqueued
	err := docketent.WithTx(ctx, s.client, func(tx *ent.Tx) error {
		sh, err := tx.Shipment.Get(ctx, id)
		if err != nil {
			return err
		}
		job, err = s.enqueueTracking(ctx, tx, sh)
		return err
	})
	return job, err
}
