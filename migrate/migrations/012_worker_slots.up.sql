-- How many handler slots a worker process runs (the sum of its pools'
-- concurrency), for status and the dashboard's workers page. Null for a
-- process of an earlier version, which does not write it.
ALTER TABLE {{schema}}.docket_workers ADD COLUMN IF NOT EXISTS slots integer;
