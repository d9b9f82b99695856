-- Attempt history: each run of a job that ended (failed and retried,
-- reaped, dead-lettered) leaves one entry in attempt_log, a JSON array kept
-- on the job's own row and carried with it to history, to the dead-letter
-- table and back on replay. Retention is the row's: the log goes with its
-- history partition, with a purged dead letter, or with a job deleted on
-- completion when history is off. Nothing is written on the claim, and a
-- job that succeeds on its first attempt writes no log at all: its one
-- attempt is the history row's started_at, finished_at and worker_id.
--
-- An entry is {"attempt", "started_at", "finished_at", "worker", "host",
-- "pid", "outcome", "error"} (see internal/engine/pgsql/attempts.go).
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS attempt_log jsonb;
ALTER TABLE {{schema}}.docket_jobs_dead ADD COLUMN IF NOT EXISTS attempt_log jsonb;
ALTER TABLE {{schema}}.docket_jobs_done ADD COLUMN IF NOT EXISTS attempt_log jsonb;
-- The worker process whose run completed the job.
ALTER TABLE {{schema}}.docket_jobs_done ADD COLUMN IF NOT EXISTS worker_id uuid;
