package schema

import (
	"encoding/json"

	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"
)

// Postgres column types that differ from Ent's defaults (character varying
// for strings, bigint for int).
var (
	text     = map[string]string{dialect.Postgres: "text"}
	smallint = map[string]string{dialect.Postgres: "smallint"}
	integer  = map[string]string{dialect.Postgres: "integer"}
)

// JobMixin holds the columns every Docket job table has: the live jobs, the
// history and the dead-letter table. The id is the job's id for its whole
// life, so a job can be followed from one table to the next.
type JobMixin struct {
	mixin.Schema
}

// Fields of JobMixin.
func (JobMixin) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id").Immutable().
			Comment("The job's id, kept from enqueue to history or dead-letter table."),
		field.String("queue").SchemaType(text).
			Comment("Queue the job was routed to."),
		field.String("kind").SchemaType(text).
			Comment("Stable kind of the job's args; selects the handler."),
		field.Int("priority").SchemaType(smallint).Default(0).
			Comment("Higher runs first inside a queue (-10..10)."),
		field.String("tenant").SchemaType(text).Default("").
			Comment("Owner of the job for per-tenant claim caps; empty when none."),
		field.String("serial_key").SchemaType(text).Optional().Nillable().
			Comment("Jobs with the same serial key never run at the same time."),
		field.String("unique_key").SchemaType(text).Optional().Nillable().
			Comment("Idempotency key: unique among in-flight jobs."),
		field.Int("attempts").SchemaType(integer).Default(0).
			Comment("Runs started so far (snoozes not counted)."),
		field.Int("max_attempts").SchemaType(integer).Default(25).
			Comment("Runs the job gets before it is dead-lettered."),
		field.Time("created_at").Immutable().
			Comment("When the job was enqueued."),
		field.Time("run_at").
			Comment("When the job is (or was last) due."),
		field.JSON("payload", json.RawMessage{}).
			Comment("The job's args as JSON. May carry personal data: do not log it."),
		field.JSON("meta", map[string]string{}).Optional().
			Comment("Small metadata (trace context, schedule name); may be logged."),
		field.Int64("workflow_id").Optional().Nillable().
			Comment("The workflow the job belongs to, if any (docket_workflows)."),
		field.JSON("attempt_log", json.RawMessage{}).Optional().
			Comment("The job's ended runs, oldest first (admin.Jobs.Attempts reads them); null before the first."),
	}
}

// docketTable names a Docket table and keeps Ent's migration away from it:
// Docket's own migrator (migrate.Migrator, `docket migrate`) owns the DDL.
func docketTable(name string) []schema.Annotation {
	return []schema.Annotation{entsql.Table(name), entsql.Skip()}
}
