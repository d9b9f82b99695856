package schema

import (
	"encoding/json"

	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// DeadJob is docket_jobs_dead, the dead-letter table: jobs that exhausted
// their attempts, were cancelled or could not be decoded.
type DeadJob struct {
	ent.Schema
}

// Mixin of DeadJob.
func (DeadJob) Mixin() []ent.Mixin { return []ent.Mixin{JobMixin{}} }

// Fields of DeadJob besides the shared ones.
func (DeadJob) Fields() []ent.Field {
	return []ent.Field{
		field.Time("dead_at").
			Comment("When the job was dead-lettered."),
		field.String("reason").SchemaType(text).
			Comment("Why: exhausted, cancelled, undecodable, ..."),
		field.String("last_error").SchemaType(text).Optional().Nillable().
			Comment("Error of the last attempt, if any."),
		field.JSON("result", json.RawMessage{}).Optional().
			Comment("What the handler recorded with Job.SetResult, as JSON; null when nothing. May carry personal data."),
		field.JSON("progress", json.RawMessage{}).Optional().
			Comment("The last progress value the job reported while it ran, if any."),
		field.String("progress_message").SchemaType(text).Optional().Nillable().
			Comment("The last progress message the job reported while it ran, if any."),
		field.Time("progress_at").Optional().Nillable().
			Comment("When the last progress was written."),
	}
}

// Indexes of DeadJob, as migrations 001 and 014 create them.
func (DeadJob) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("dead_at").StorageKey("docket_jobs_dead_dead_at_idx"),
		index.Fields("kind", "dead_at").StorageKey("docket_jobs_dead_kind_idx"),
		index.Fields("workflow_id").
			Annotations(entsql.IndexWhere("workflow_id IS NOT NULL")).
			StorageKey("docket_jobs_dead_workflow_idx"),
	}
}

// Annotations of DeadJob.
func (DeadJob) Annotations() []schema.Annotation { return docketTable("docket_jobs_dead") }
