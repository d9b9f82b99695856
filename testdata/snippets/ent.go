// The declarations docs/ent.md's Go blocks assume: the service's Ent client
// (the shipments example's generated package), its Docket client, and its
// job types.
package snippet

import (
	"context"

	"entgo.io/ent/dialect"
	"github.com/docketq/docket"
	"github.com/docketq/docket/examples/shipments/ent"
	"github.com/docketq/docket/handlers"
)

var (
	ctx          context.Context
	url          string
	reg          *handlers.Registry
	client       *ent.Client
	docketClient *docket.Client
	drv          dialect.Driver
)

type TrackShipment struct {
	ID int `json:"id"`
}

func (TrackShipment) Kind() string { return "track_shipment" }

type NotifyCustomer struct {
	ShipmentID int `json:"shipment_id"`
}

func (NotifyCustomer) Kind() string { return "notify_customer" }
