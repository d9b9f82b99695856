package schema

import (
	"encoding/json"

	"github.com/google/uuid"

	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Job is docket_jobs, the hot table of live jobs: scheduled, ready,
// waiting (in a serial key's line, for its workflow parents, or for its child workflow) and running. Read it with Ent; write it through Docket (docket.Client, or this
// module's ent.Enqueue) so that validation, NOTIFY and unique keys apply.
type Job struct {
	ent.Schema
}

// Mixin of Job.
func (Job) Mixin() []ent.Mixin { return []ent.Mixin{JobMixin{}} }

// Fields of Job besides the shared ones.
func (Job) Fields() []ent.Field {
	return []ent.Field{
		field.Enum("state").Values("scheduled", "ready", "running", "waiting").Default("ready").SchemaType(text).
			Comment("scheduled (future run_at), ready (due), running (claimed) or waiting (behind its serial key's head, for its workflow parents, or for its child workflow)."),
		field.Int64("ready_seq").
			Comment("Claim order inside a priority; drawn each time the job becomes ready."),
		field.UUID("locked_by", uuid.UUID{}).Optional().Nillable().
			Comment("Worker process that holds the job while it runs."),
		field.Time("locked_at").Optional().Nillable().
			Comment("When the running job was claimed."),
		field.Time("lease_until").Optional().Nillable().
			Comment("Claim expiry; heartbeats extend it, the reaper acts on it."),
		field.String("last_error").SchemaType(text).Optional().Nillable().
			Comment("Error of the previous attempt, if any."),
		field.Int64("claim_id").Optional().Nillable().
			Comment("The claim that last took the job; outcomes of a run are matched against it."),
		field.Int64("serial_seq").Optional().Nillable().
			Comment("Place in its serial key's line, taken when the job first became ready."),
		field.Time("wait_until").Optional().Nillable().
			Comment("A workflow step's deadline while it waits for its signal (9999-12-31 without a timeout); kept after a timeout released it."),
		field.Int64("child_workflow_id").Optional().Nillable().
			Comment("The child workflow a waiting job waits for (docket_workflows), if any."),
		field.Int64("parent_step_id").Optional().Nillable().
			Comment("On a job of a child workflow: the job that waits for that workflow."),
		field.JSON("progress", json.RawMessage{}).Optional().
			Comment("The last progress value the running job's handler reported (handlers.SetProgress)."),
		field.String("progress_message").SchemaType(text).Optional().Nillable().
			Comment("The last progress message the running job's handler reported."),
		field.Time("progress_at").Optional().Nillable().
			Comment("When the last reported progress was written."),
		field.Time("cancel_requested_at").Optional().Nillable().
			Comment("When an operator asked to cancel the running job; it then ends dead, reason cancelled."),
		field.String("cancel_note").SchemaType(text).Optional().Nillable().
			Comment("The note of the cancel request, recorded as the dead job's error."),
	}
}

// Indexes of Job, exactly as the migrations leave them. The predicates are
// in PostgreSQL's normalised form (as pg_get_expr prints them, without the
// outer parentheses), so schema diffing sees no change.
func (Job) Indexes() []ent.Index {
	ready := entsql.IndexWhere("state = 'ready'::text")
	return []ent.Index{
		index.Fields("queue", "priority", "ready_seq").
			Annotations(ready, entsql.DescColumns("priority")).
			StorageKey("docket_jobs_claim_idx"),
		index.Fields("queue", "tenant", "priority", "ready_seq").
			Annotations(entsql.IndexWhere("(state = 'ready'::text) AND (tenant <> ''::text)"), entsql.DescColumns("priority")).
			StorageKey("docket_jobs_tenant_idx"),
		index.Fields("run_at").
			Annotations(entsql.IndexWhere("state = 'scheduled'::text")).
			StorageKey("docket_jobs_scheduled_idx"),
		index.Fields("locked_by").
			Annotations(entsql.IndexWhere("state = 'running'::text")).
			StorageKey("docket_jobs_running_idx"),
		index.Fields("unique_key").Unique().
			Annotations(entsql.IndexWhere("unique_key IS NOT NULL")).
			StorageKey("docket_jobs_unique_key_idx"),
		index.Fields("serial_key").Unique().
			Annotations(entsql.IndexWhere("(serial_seq IS NOT NULL) AND (state <> 'waiting'::text)")).
			StorageKey("docket_jobs_serial_holder_idx"),
		index.Fields("serial_key", "serial_seq").
			Annotations(entsql.IndexWhere("state = 'waiting'::text")).
			StorageKey("docket_jobs_serial_line_idx"),
		index.Fields("workflow_id").
			Annotations(entsql.IndexWhere("workflow_id IS NOT NULL")).
			StorageKey("docket_jobs_workflow_idx"),
		index.Fields("id").
			Annotations(entsql.IndexWhere("(state = 'waiting'::text) AND (workflow_id IS NOT NULL)")).
			StorageKey("docket_jobs_workflow_waiting_idx"),
		index.Fields("wait_until").
			Annotations(entsql.IndexWhere("(state = 'waiting'::text) AND (wait_until IS NOT NULL)")).
			StorageKey("docket_jobs_wait_until_idx"),
		index.Fields("id").
			Annotations(entsql.IndexWhere("(state = 'waiting'::text) AND (child_workflow_id IS NOT NULL)")).
			StorageKey("docket_jobs_child_waiting_idx"),
	}
}

// Annotations of Job.
func (Job) Annotations() []schema.Annotation { return docketTable("docket_jobs") }
