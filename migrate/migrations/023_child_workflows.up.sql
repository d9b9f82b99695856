-- Child workflows: a step of a workflow (or a job outside workflows) whose
-- transactional handler enqueued a workflow of its own in its transaction
-- does not complete when its handler returns. It waits in the jobs table
-- (state 'waiting', child_workflow_id set) and completes when its child
-- workflow succeeds, or dead-letters (reason child_failed) when the child
-- fails or is cancelled, in the transaction that removes the child's last
-- job from the jobs table. A waiting step that leaves otherwise (its own
-- workflow cancelled, Jobs.Cancel, Jobs.Delete) cancels its child.
--
-- Jobs outside child workflows pay nothing: both triggers below fire only
-- for rows with one of the two new columns set. As in 014, nothing locks a
-- shared row: two transactions that remove a child workflow's last two jobs
-- at once can each still see the other's; the worker's sweep
-- (internal/engine/queue/child.go) settles such a step.

-- parent_job_id: the job that waits for this workflow, and
-- parent_workflow_id that job's workflow (NULL for a job outside
-- workflows). depth: 0 for a workflow nobody waits for, else the parent
-- job's workflow's depth + 1 (a job outside workflows counts as depth 0).
-- parent_to_history: whether the parent, once it completes, moves to
-- history (the enqueuing client keeps history) or is deleted.
ALTER TABLE {{schema}}.docket_workflows
    ADD COLUMN IF NOT EXISTS parent_job_id bigint,
    ADD COLUMN IF NOT EXISTS parent_workflow_id bigint,
    ADD COLUMN IF NOT EXISTS depth smallint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS parent_to_history boolean;

CREATE INDEX IF NOT EXISTS docket_workflows_parent_job_idx
    ON {{schema}}.docket_workflows (parent_job_id)
    WHERE parent_job_id IS NOT NULL;

-- child_workflow_id: set on a job waiting for its child workflow.
-- parent_step_id: set on every job of a child workflow, the job that waits
-- for it (the triggers' WHEN conditions can read only the row).
ALTER TABLE {{schema}}.docket_jobs
    ADD COLUMN IF NOT EXISTS child_workflow_id bigint,
    ADD COLUMN IF NOT EXISTS parent_step_id bigint;

-- The sweep's walk over steps waiting for a child workflow.
CREATE INDEX IF NOT EXISTS docket_jobs_child_waiting_idx
    ON {{schema}}.docket_jobs (id)
    WHERE state = 'waiting' AND child_workflow_id IS NOT NULL;

-- 'waiting' now also means: a step waiting for its child workflow.
ALTER TABLE {{schema}}.docket_jobs DROP CONSTRAINT IF EXISTS docket_jobs_waiting_in_line;
ALTER TABLE {{schema}}.docket_jobs ADD CONSTRAINT docket_jobs_waiting_in_line
    CHECK (state <> 'waiting' OR (serial_key IS NOT NULL AND serial_seq IS NOT NULL)
        OR workflow_id IS NOT NULL OR child_workflow_id IS NOT NULL);

-- docket_child_settle decides about the step waiting for workflow wf once
-- no job of wf is left in the jobs table: wf succeeded (nothing of it
-- dead, not cancelled): the step completes, to history or deleted as its
-- enqueuing client keeps history; else the step moves to the dead-letter
-- table, reason child_failed, naming wf and its first job that failed of
-- itself. A step that completes goes back to 'running' for the instant of
-- its delete, so that its own workflow's trigger (docket_workflow_release)
-- reads its departure as a completion and releases its dependents; a
-- failed one is in the dead-letter table when that trigger looks, which
-- cancels them. It returns whether it settled a step; false when wf still
-- has jobs, has no parent, or its step was settled already.
CREATE OR REPLACE FUNCTION {{schema}}.docket_child_settle(wf bigint)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    w record;
    bad record;
    note text;
BEGIN
    IF EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE workflow_id = wf) THEN
        RETURN false;
    END IF;
    SELECT parent_job_id, parent_to_history, cancelled_at INTO w
    FROM {{schema}}.docket_workflows WHERE id = wf;
    IF w.parent_job_id IS NULL THEN
        RETURN false;
    END IF;
    IF w.cancelled_at IS NULL AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE workflow_id = wf) THEN
        UPDATE {{schema}}.docket_jobs
        SET state = 'running', locked_by = '00000000-0000-0000-0000-000000000000'
        WHERE id = w.parent_job_id AND state = 'waiting' AND child_workflow_id = wf;
        IF NOT FOUND THEN
            RETURN false;
        END IF;
        IF coalesce(w.parent_to_history, true) THEN
            WITH d AS (
                DELETE FROM {{schema}}.docket_jobs WHERE id = w.parent_job_id RETURNING *
            )
            INSERT INTO {{schema}}.docket_jobs_done
                (id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
                 created_at, run_at, started_at, finished_at, payload, meta, workflow_id)
            SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
                created_at, run_at, locked_at, clock_timestamp(), payload, meta, workflow_id
            FROM d;
        ELSE
            DELETE FROM {{schema}}.docket_jobs WHERE id = w.parent_job_id;
        END IF;
        RETURN true;
    END IF;
    IF w.cancelled_at IS NOT NULL THEN
        note := format('child workflow %s cancelled', wf);
    ELSE
        -- The job that failed of itself, not one cancelled after it.
        SELECT id, kind, reason INTO bad FROM {{schema}}.docket_jobs_dead
        WHERE workflow_id = wf ORDER BY (reason = 'cancelled'), id LIMIT 1;
        note := format('child workflow %s failed: job %s (%s) %s', wf, bad.id, bad.kind,
            CASE bad.reason WHEN 'cancelled' THEN 'was cancelled' ELSE 'dead-lettered: ' || bad.reason END);
    END IF;
    WITH gone AS (
        DELETE FROM {{schema}}.docket_jobs
        WHERE id = w.parent_job_id AND state = 'waiting' AND child_workflow_id = wf
        RETURNING *
    )
    INSERT INTO {{schema}}.docket_jobs_dead
        (id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
         created_at, run_at, reason, last_error, payload, meta, workflow_id)
    SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
        created_at, run_at, 'child_failed', note, payload, meta, workflow_id
    FROM gone;
    RETURN FOUND;
END
$$;

-- docket_child_cancel cancels workflow wf as Workflows.Cancel does (marked
-- cancelled; its jobs that are not running move to the dead-letter table,
-- reason cancelled), unless it finished: no job of it is left.
CREATE OR REPLACE FUNCTION {{schema}}.docket_child_cancel(wf bigint)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE workflow_id = wf) THEN
        RETURN;
    END IF;
    UPDATE {{schema}}.docket_workflows SET cancelled_at = coalesce(cancelled_at, now()) WHERE id = wf;
    WITH gone AS (
        DELETE FROM {{schema}}.docket_jobs
        WHERE workflow_id = wf AND state <> 'running'
        RETURNING *
    )
    INSERT INTO {{schema}}.docket_jobs_dead
        (id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
         created_at, run_at, reason, last_error, payload, meta, workflow_id)
    SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
        created_at, run_at, 'cancelled', format('workflow %s cancelled', wf), payload, meta, workflow_id
    FROM gone;
END
$$;

-- docket_child_left runs when a job of a child workflow leaves the jobs
-- table: if it was the workflow's last, the step waiting for it settles.
CREATE OR REPLACE FUNCTION {{schema}}.docket_child_left()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM {{schema}}.docket_child_settle(OLD.workflow_id);
    RETURN NULL;
END
$$;

-- docket_child_step_left runs when a step waiting for its child workflow
-- leaves the jobs table. Settled by docket_child_settle, its child has
-- finished and nothing is done; removed any other way (its own workflow
-- cancelled, Jobs.Cancel, Jobs.Delete), its child workflow is cancelled,
-- and the children's children in turn by this same trigger.
CREATE OR REPLACE FUNCTION {{schema}}.docket_child_step_left()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM {{schema}}.docket_child_cancel(OLD.child_workflow_id);
    RETURN NULL;
END
$$;

-- Named to fire after docket_jobs_workflow_release (triggers of one event
-- fire in name order): the release has cancelled the job's dependents in
-- the child workflow by then, so their departures settle the step first.
CREATE TRIGGER docket_jobs_workflow_to_parent
    AFTER DELETE ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (OLD.parent_step_id IS NOT NULL)
    EXECUTE FUNCTION {{schema}}.docket_child_left();

CREATE TRIGGER docket_jobs_workflow_to_child
    AFTER DELETE ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (OLD.child_workflow_id IS NOT NULL)
    EXECUTE FUNCTION {{schema}}.docket_child_step_left();
