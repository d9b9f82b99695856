DROP TRIGGER IF EXISTS docket_jobs_workflow_results ON {{schema}}.docket_jobs;
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_inputs(bigint);
DROP FUNCTION IF EXISTS {{schema}}.docket_workflow_results_drop();
DROP TABLE IF EXISTS {{schema}}.docket_workflow_results;
ALTER TABLE {{schema}}.docket_workflow_deps DROP COLUMN IF EXISTS parent_ref;
ALTER TABLE {{schema}}.docket_jobs_dead DROP COLUMN IF EXISTS result;
ALTER TABLE {{schema}}.docket_jobs_done DROP COLUMN IF EXISTS result;
