-- Job results: what a handler recorded with Job.SetResult, as JSON.
--
-- A completed job keeps its result in history, a dead one (exhausted or
-- cancelled by its handler) the result its last attempt recorded. Adding a
-- nullable column without a default is a change of the catalog only, also
-- on the partitioned history table.
ALTER TABLE {{schema}}.docket_jobs_done ADD COLUMN IF NOT EXISTS result jsonb;
ALTER TABLE {{schema}}.docket_jobs_dead ADD COLUMN IF NOT EXISTS result jsonb;

-- A workflow step reads its parents' results by the refs the workflow gave
-- them: each dependency names its parent's ref. Dependencies written before
-- this migration have none, and their parents' results are not readable by
-- ref.
ALTER TABLE {{schema}}.docket_workflow_deps ADD COLUMN IF NOT EXISTS parent_ref text;

-- The results of completed workflow jobs that have dependents, from the
-- parent's completion until its workflow finishes (no job of it is left in
-- docket_jobs), with history on or off: the one place a claim reads a
-- step's inputs from. Written by the completion statement, in the
-- transaction that releases the dependents.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_workflow_results (
    job_id      bigint NOT NULL PRIMARY KEY,
    workflow_id bigint NOT NULL REFERENCES {{schema}}.docket_workflows (id) ON DELETE CASCADE,
    result      jsonb  NOT NULL
);

CREATE INDEX IF NOT EXISTS docket_workflow_results_workflow_idx
    ON {{schema}}.docket_workflow_results (workflow_id);

-- docket_workflow_results_drop removes a workflow's results when its last
-- job leaves the jobs table. It runs after docket_workflow_release (triggers
-- fire in name order), which has readied or cancelled the children by then.
-- Two transactions that remove a workflow's last two jobs at once each
-- still see the other's; the workers' workflow sweep removes what they
-- leave.
CREATE OR REPLACE FUNCTION {{schema}}.docket_workflow_results_drop()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_results WHERE workflow_id = OLD.workflow_id)
        AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE workflow_id = OLD.workflow_id) THEN
        DELETE FROM {{schema}}.docket_workflow_results WHERE workflow_id = OLD.workflow_id;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS docket_jobs_workflow_results ON {{schema}}.docket_jobs;
CREATE TRIGGER docket_jobs_workflow_results
    AFTER DELETE ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (OLD.workflow_id IS NOT NULL)
    EXECUTE FUNCTION {{schema}}.docket_workflow_results_drop();

-- docket_workflow_inputs is what a claim reads of a workflow job's
-- workflow (the claim calls it for workflow jobs only): its parents by the
-- refs the workflow gave them, each with its result when it completed with
-- one, as one JSON object, NULL for a job without parents:
--
--   {"parents": {"extract": {"result": {"rows": 3}}, "audit": {}}}
--
-- Other inputs of a step can take their own member beside "parents".
-- Parents past the first 1,000 with results (by id) are listed as
-- {"omitted": true}: 1,000 results of at most 64 KiB stay well inside what
-- one jsonb value may hold (256 MiB), so no fan-in can make a claim fail.
-- PL/pgSQL, so that the planner cannot inline it into the claim: inlined,
-- its subquery would open the dependency and result tables on every claim,
-- also of jobs outside workflows, which never call it.
CREATE OR REPLACE FUNCTION {{schema}}.docket_workflow_inputs(job bigint)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    RETURN (
        SELECT jsonb_build_object('parents', jsonb_object_agg(p.parent_ref,
            CASE WHEN p.result IS NULL THEN '{}'::jsonb
                WHEN p.n <= 1000 THEN jsonb_build_object('result', p.result)
                ELSE '{"omitted": true}'::jsonb END))
        FROM (
            SELECT d.parent_ref, r.result, count(r.result) OVER (ORDER BY d.parent_id) AS n
            FROM {{schema}}.docket_workflow_deps d
            LEFT JOIN {{schema}}.docket_workflow_results r ON r.job_id = d.parent_id
            WHERE d.child_id = job AND d.parent_ref IS NOT NULL
        ) p
        HAVING count(*) > 0);
END
$$;
