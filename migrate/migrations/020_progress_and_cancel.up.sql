-- Progress a running job's handler reports (handlers.SetProgress), written
-- with the worker's heartbeats: a small JSON value, a message and when it
-- was written. None of these columns is indexed, so a heartbeat that
-- carries progress stays a HOT update.
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS progress jsonb;
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS progress_message text;
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS progress_at timestamptz;

-- An operator's request to cancel a running job (admin Jobs.Cancel): when
-- it was made and the note the job is dead-lettered with. While it is set,
-- the job's worker can no longer complete, retry, snooze or release the
-- run; the run ends in the dead-letter table with reason 'cancelled'.
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS cancel_requested_at timestamptz;
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS cancel_note text;

-- A dead job keeps the last progress it reported, for triage.
ALTER TABLE {{schema}}.docket_jobs_dead ADD COLUMN IF NOT EXISTS progress jsonb;
ALTER TABLE {{schema}}.docket_jobs_dead ADD COLUMN IF NOT EXISTS progress_message text;
ALTER TABLE {{schema}}.docket_jobs_dead ADD COLUMN IF NOT EXISTS progress_at timestamptz;
