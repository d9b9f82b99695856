ALTER TABLE {{schema}}.docket_jobs_done DROP COLUMN IF EXISTS worker_id;
ALTER TABLE {{schema}}.docket_jobs_done DROP COLUMN IF EXISTS attempt_log;
ALTER TABLE {{schema}}.docket_jobs_dead DROP COLUMN IF EXISTS attempt_log;
ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS attempt_log;
