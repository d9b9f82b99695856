-- Retries count the attempts after the first of the jobs that ran. A job
-- that left without running (cancelled while ready, scheduled or waiting;
-- a workflow job cancelled with its failed parent) has 0 attempts and spent
-- no retry: attempts - 1 counted it as -1. Lag is how long due jobs wait
-- for a worker; a job waiting for its key's holder is not waiting for a
-- worker.
CREATE OR REPLACE VIEW {{schema}}.docket_queue_status AS
WITH live AS (
    SELECT queue,
        count(*) FILTER (WHERE state = 'ready') AS ready,
        count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
        count(*) FILTER (WHERE state = 'running') AS running,
        min(run_at) FILTER (WHERE state IN ('ready', 'scheduled') AND run_at <= now()) AS oldest_due_at
    FROM {{schema}}.docket_jobs
    GROUP BY queue
), done AS (
    SELECT queue,
        count(*) FILTER (WHERE finished_at > now() - interval '1 minute') AS completed_1m,
        count(*) AS completed_1h,
        coalesce(sum(greatest(attempts - 1, 0)) FILTER (WHERE finished_at > now() - interval '1 minute'), 0) AS retries_1m,
        coalesce(sum(greatest(attempts - 1, 0)), 0) AS retries_1h
    FROM {{schema}}.docket_jobs_done
    WHERE finished_at > now() - interval '1 hour'
    GROUP BY queue
), dead AS (
    SELECT queue,
        count(*) AS dlq_size,
        count(*) FILTER (WHERE dead_at > now() - interval '1 minute') AS dead_1m,
        count(*) FILTER (WHERE dead_at > now() - interval '1 hour') AS dead_1h,
        count(*) FILTER (WHERE dead_at > now() - interval '24 hours') AS dead_24h,
        coalesce(sum(greatest(attempts - 1, 0)) FILTER (WHERE dead_at > now() - interval '1 minute'), 0) AS retries_1m,
        coalesce(sum(greatest(attempts - 1, 0)) FILTER (WHERE dead_at > now() - interval '1 hour'), 0) AS retries_1h
    FROM {{schema}}.docket_jobs_dead
    GROUP BY queue
), removed AS (
    SELECT queue, sum(n) AS removed_24h
    FROM {{schema}}.docket_dead_removed
    WHERE at > now() - interval '24 hours' AND dead_minute <= now() - interval '24 hours'
    GROUP BY queue
), names AS (
    SELECT queue FROM live
    UNION SELECT queue FROM done
    UNION SELECT queue FROM dead
    UNION SELECT name FROM {{schema}}.docket_queues
)
SELECT n.queue,
    coalesce(q.paused, false) AS paused,
    coalesce(l.ready, 0) AS ready,
    coalesce(l.scheduled, 0) AS scheduled,
    coalesce(l.running, 0) AS running,
    l.oldest_due_at,
    coalesce(extract(epoch FROM now() - l.oldest_due_at), 0)::double precision AS lag_seconds,
    coalesce(d.completed_1m, 0) AS completed_1m,
    coalesce(d.completed_1h, 0) AS completed_1h,
    (coalesce(d.retries_1m, 0) + coalesce(x.retries_1m, 0))::bigint AS retries_1m,
    (coalesce(d.retries_1h, 0) + coalesce(x.retries_1h, 0))::bigint AS retries_1h,
    coalesce(x.dead_1m, 0) AS dead_1m,
    coalesce(x.dead_1h, 0) AS dead_1h,
    coalesce(x.dlq_size, 0) AS dlq_size,
    (coalesce(x.dead_24h, 0) - coalesce(r.removed_24h, 0))::bigint AS dlq_delta_24h
FROM names n
LEFT JOIN live l ON l.queue = n.queue
LEFT JOIN done d ON d.queue = n.queue
LEFT JOIN dead x ON x.queue = n.queue
LEFT JOIN removed r ON r.queue = n.queue
LEFT JOIN {{schema}}.docket_queues q ON q.name = n.queue;

-- docket_workflow_release runs when a workflow job leaves the jobs table.
-- Where it went says how it ended: into the dead-letter table in the same
-- statement (an AFTER trigger sees what its statement wrote), it failed;
-- from 'running' and not there, it completed (completion is the only way
-- out of 'running' that leaves no dead letter); from any other state and
-- not there, it was deleted (DeleteJob, RemoveQueued) and never ran, which
-- its dependents take as a failure: a child runs only after its parents
-- completed. Waiting children are cancelled when it failed or was deleted
-- (except those that run anyway) or when its workflow is cancelled; the
-- others become ready once no parent of theirs is left.
CREATE OR REPLACE FUNCTION {{schema}}.docket_workflow_release()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    failed boolean;
    deleted boolean;
    stopped boolean;
BEGIN
    failed := EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE id = OLD.id);
    deleted := NOT failed AND OLD.state <> 'running';
    stopped := EXISTS (SELECT 1 FROM {{schema}}.docket_workflows
                       WHERE id = OLD.workflow_id AND cancelled_at IS NOT NULL);
    IF stopped THEN
        PERFORM {{schema}}.docket_workflow_cancel_children(OLD.id, true,
            format('workflow %s cancelled', OLD.workflow_id));
    ELSIF failed OR deleted THEN
        PERFORM {{schema}}.docket_workflow_cancel_children(OLD.id, false,
            format(CASE WHEN deleted THEN 'parent job %s deleted' ELSE 'parent job %s failed' END, OLD.id));
        PERFORM {{schema}}.docket_workflow_ready(OLD.id, true, 'docket_' || TG_TABLE_SCHEMA);
    ELSE
        PERFORM {{schema}}.docket_workflow_ready(OLD.id, false, 'docket_' || TG_TABLE_SCHEMA);
    END IF;
    RETURN NULL;
END
$$;

-- Active schedules whose kind no live worker process serves: their runs
-- would wait unclaimed. A schedule's runs go to run_queue, the queue the
-- process that registered it resolved (its own, else its kind's), or to
-- its own queue when no such process stored one; a live worker must serve
-- the kind in that queue. When neither names a queue (a schedule of a kind
-- no registering process knew), any live worker serving the kind counts.
-- Paused schedules fire nothing and are left out.
CREATE OR REPLACE VIEW {{schema}}.docket_unserved_schedules AS
SELECT s.name, s.kind, coalesce(s.run_queue, s.queue) AS queue, s.next_fire
FROM {{schema}}.docket_schedules s
WHERE NOT s.paused AND NOT EXISTS (
    SELECT 1 FROM {{schema}}.docket_workers w
    WHERE w.expires_at > now() AND s.kind = ANY(w.kinds)
        AND (coalesce(s.run_queue, s.queue) = '' OR coalesce(s.run_queue, s.queue) = ANY(w.queues)));
