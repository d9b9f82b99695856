package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
)

// Shipment is a parcel handed to a carrier. Creating one enqueues its
// tracking job (in the service) and a notification (in a hook), in the same
// transaction.
type Shipment struct {
	ent.Schema
}

// Fields of Shipment.
func (Shipment) Fields() []ent.Field {
	return []ent.Field{
		field.String("carrier"),
		field.JSON("address", map[string]string{}).
			Comment("Stored as jsonb; round-trips through database/sql."),
		field.Enum("status").Values("created", "in_transit").Default("created"),
		field.String("tracking_number").Optional(),
		field.Bool("notified").Default(false),
	}
}

// Edges of Shipment.
func (Shipment) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("tenant", Tenant.Type).Ref("shipments").Unique().Required(),
	}
}
