// Package schema is the Ent schema of the shipments example: tenants and
// their shipments.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
)

// Tenant is a customer that ships parcels.
type Tenant struct {
	ent.Schema
}

// Fields of Tenant.
func (Tenant) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").Unique(),
	}
}

// Edges of Tenant.
func (Tenant) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("shipments", Shipment.Type),
	}
}
