package main

import "github.com/docketq/docket"

// TrackShipment registers a shipment with its carrier and records the
// carrier's tracking number. Its tenant is the carrier, so that claims and
// the carrier cap are per carrier.
type TrackShipment struct {
	ShipmentID int    `json:"shipment_id"`
	Carrier    string `json:"carrier"`
}

// Kind of TrackShipment.
func (TrackShipment) Kind() string { return "shipments.track" }

// Opts routes tracking jobs to their own queue.
func (TrackShipment) Opts() docket.Opts { return docket.Opts{Queue: "tracking"} }

// NotifyCustomer tells the tenant its shipment was created.
type NotifyCustomer struct {
	ShipmentID int    `json:"shipment_id"`
	Tenant     string `json:"tenant"`
}

// Kind of NotifyCustomer.
func (NotifyCustomer) Kind() string { return "shipments.notify" }

// Opts routes notifications to their own queue.
func (NotifyCustomer) Opts() docket.Opts { return docket.Opts{Queue: "notifications"} }
