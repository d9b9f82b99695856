package schema

import (
	"encoding/json"

	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// DoneJob is docket_jobs_done, the history of finished jobs, range
// partitioned by finished_at (one partition per UTC day). Ent cannot create
// partitioned tables; Docket's migrator and worker maintenance do. The table
// has no primary key (a partitioned table's key must hold the partition
// column), but a job reaches history once, so id identifies a row.
type DoneJob struct {
	ent.Schema
}

// Mixin of DoneJob.
func (DoneJob) Mixin() []ent.Mixin { return []ent.Mixin{JobMixin{}} }

// Fields of DoneJob besides the shared ones.
func (DoneJob) Fields() []ent.Field {
	return []ent.Field{
		field.Time("started_at").Optional().Nillable().
			Comment("When the last run was claimed."),
		field.Time("finished_at").
			Comment("When the job completed; the partition key."),
		field.JSON("result", json.RawMessage{}).Optional().
			Comment("What the handler recorded with Job.SetResult, as JSON; null when nothing. May carry personal data."),
		field.UUID("worker_id", uuid.UUID{}).Optional().Nillable().
			Comment("The worker process whose run completed the job."),
	}
}

// Indexes of DoneJob, as migrations 001 and 003 create them.
func (DoneJob) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("id").StorageKey("docket_jobs_done_id_idx"),
		// Throughput by minute and hour, index-only (migration 003).
		index.Fields("finished_at").
			Annotations(entsql.IncludeColumns("queue", "attempts")).
			StorageKey("docket_jobs_done_finished_idx"),
	}
}

// Annotations of DoneJob.
func (DoneJob) Annotations() []schema.Annotation { return docketTable("docket_jobs_done") }
