package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/examples/shipments/ent"
	"github.com/docketq/docket/examples/shipments/ent/shipment"
	"github.com/docketq/docket/handlers"
)

// carrierCap is how many tracking calls one carrier's API takes at once.
const carrierCap = 2

// carrierSlots caps concurrent calls per carrier in this process. The
// worker pool's TenantCap keeps one carrier from taking a whole claim batch;
// these slots hold the hard limit of the carrier's API: a job that finds
// its carrier busy is snoozed (the attempt is not spent).
type carrierSlots struct {
	mu      sync.Mutex
	busy    map[string]int
	maxSeen map[string]int
}

func (c *carrierSlots) acquire(carrier string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[carrier] >= carrierCap {
		return false
	}
	c.busy[carrier]++
	c.maxSeen[carrier] = max(c.maxSeen[carrier], c.busy[carrier])
	return true
}

func (c *carrierSlots) release(carrier string) {
	c.mu.Lock()
	c.busy[carrier]--
	c.mu.Unlock()
}

// workers holds the handlers and what they observed.
type workers struct {
	client   *ent.Client
	slots    carrierSlots
	tracked  atomic.Int64
	notified atomic.Int64
	snoozed  atomic.Int64
}

func newWorkers(client *ent.Client) *workers {
	return &workers{client: client, slots: carrierSlots{busy: map[string]int{}, maxSeen: map[string]int{}}}
}

func (w *workers) register(reg *handlers.Registry) {
	handlers.MustRegister(reg, w.track, handlers.KindOpts{Queue: "tracking", Timeout: 10 * time.Second})
	handlers.MustRegister(reg, w.notify, handlers.KindOpts{Queue: "notifications"})
}

// track "calls the carrier" and records the tracking number with Ent. It is
// idempotent: a rerun overwrites the same number.
func (w *workers) track(ctx context.Context, j *handlers.Job[TrackShipment]) error {
	if !w.slots.acquire(j.Args.Carrier) {
		w.snoozed.Add(1)
		return handlers.Snooze(20 * time.Millisecond)
	}
	defer w.slots.release(j.Args.Carrier)
	select {
	case <-time.After(30 * time.Millisecond): // the carrier's API
	case <-ctx.Done():
		return ctx.Err()
	}
	err := w.client.Shipment.UpdateOneID(j.Args.ShipmentID).
		SetStatus(shipment.StatusInTransit).
		SetTrackingNumber(fmt.Sprintf("%s-%06d", j.Args.Carrier, j.Args.ShipmentID)).
		Exec(ctx)
	if err != nil {
		return err
	}
	w.tracked.Add(1)
	return nil
}

// notify "emails the customer" and marks the shipment notified.
func (w *workers) notify(ctx context.Context, j *handlers.Job[NotifyCustomer]) error {
	if err := w.client.Shipment.UpdateOneID(j.Args.ShipmentID).SetNotified(true).Exec(ctx); err != nil {
		return err
	}
	w.notified.Add(1)
	return nil
}
