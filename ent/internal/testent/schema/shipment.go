// Package schema is the Ent schema of the test client of package ent: a
// domain table whose rows are written next to Docket jobs.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// Shipment is a domain row written in the same transaction as its jobs.
type Shipment struct {
	ent.Schema
}

// Fields of Shipment.
func (Shipment) Fields() []ent.Field {
	return []ent.Field{
		field.String("tracking").Unique(),
		field.String("carrier"),
		field.JSON("address", map[string]string{}).Optional(),
	}
}
