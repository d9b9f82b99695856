package schema

import (
	"encoding/json"

	"entgo.io/ent"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// Schedule is docket_schedules: one row per recurring schedule (package
// schedule), its definition and the fire times of its pending and last
// runs. The pending run itself is a Job with unique key "schedule:<name>".
// Register and change schedules through package schedule; read them here.
type Schedule struct {
	ent.Schema
}

// Fields of Schedule.
func (Schedule) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").StorageKey("name").SchemaType(text).Immutable().
			Comment("The schedule's name, its primary key."),
		field.String("spec").SchemaType(text).
			Comment("Cron spec (robfig/cron/v3 syntax)."),
		field.String("time_zone").SchemaType(text).Default("").
			Comment("IANA time zone the spec is read in; empty means UTC."),
		field.String("kind").SchemaType(text).
			Comment("Kind of the jobs the schedule enqueues."),
		field.String("queue").SchemaType(text),
		field.Int("priority").SchemaType(smallint).Default(0),
		field.String("tenant").SchemaType(text).Default(""),
		field.String("serial_key").SchemaType(text).Default(""),
		field.Int("max_attempts").SchemaType(integer).Default(0).
			Comment("Attempts of each run; 0 means Docket's default."),
		field.JSON("payload", json.RawMessage{}).
			Comment("Args of each run as JSON."),
		field.Int64("spread_ms").Default(0).
			Comment("Window over which runs of one spec are spread by key hash."),
		field.Enum("misfire").Values("skip", "run_once", "catch_up").Default("skip").SchemaType(text).
			Comment("What to do with runs missed while nothing ran."),
		field.Bool("paused").Default(false),
		field.Time("next_fire").Optional().Nillable().
			Comment("Fire time of the pending run; nil while there is none."),
		field.Time("last_fire").Optional().Nillable().
			Comment("Fire time of the last run that finished or died."),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
		field.Time("registered_at").
			Comment("Last time a process registered the schedule."),
		field.String("run_queue").SchemaType(text).Optional().Nillable().
			Comment("Queue of the runs as the registering process resolved it; nil when it did not know the kind's options."),
		field.Int("run_priority").SchemaType(smallint).Optional().Nillable().
			Comment("Priority of the runs as resolved at registration, like run_queue."),
		field.Int("run_max_attempts").SchemaType(integer).Optional().Nillable().
			Comment("Max attempts of the runs as resolved at registration, like run_queue."),
	}
}

// Annotations of Schedule.
func (Schedule) Annotations() []schema.Annotation { return docketTable("docket_schedules") }
