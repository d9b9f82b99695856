ALTER TABLE {{schema}}.docket_jobs_dead DROP COLUMN IF EXISTS progress_at;
ALTER TABLE {{schema}}.docket_jobs_dead DROP COLUMN IF EXISTS progress_message;
ALTER TABLE {{schema}}.docket_jobs_dead DROP COLUMN IF EXISTS progress;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS cancel_note;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS cancel_requested_at;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS progress_at;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS progress_message;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS progress;
