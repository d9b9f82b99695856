DROP VIEW IF EXISTS {{schema}}.docket_unserved_schedules;

-- The view as migration 009 defined it.
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
        coalesce(sum(attempts - 1) FILTER (WHERE finished_at > now() - interval '1 minute'), 0) AS retries_1m,
        coalesce(sum(attempts - 1), 0) AS retries_1h
    FROM {{schema}}.docket_jobs_done
    WHERE finished_at > now() - interval '1 hour'
    GROUP BY queue
), dead AS (
    SELECT queue,
        count(*) AS dlq_size,
        count(*) FILTER (WHERE dead_at > now() - interval '1 minute') AS dead_1m,
        count(*) FILTER (WHERE dead_at > now() - interval '1 hour') AS dead_1h,
        count(*) FILTER (WHERE dead_at > now() - interval '24 hours') AS dead_24h,
        coalesce(sum(attempts - 1) FILTER (WHERE dead_at > now() - interval '1 minute'), 0) AS retries_1m,
        coalesce(sum(attempts - 1) FILTER (WHERE dead_at > now() - interval '1 hour'), 0) AS retries_1h
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

-- docket_workflow_release as migration 014 defined it: a deleted job counted
-- as completed for its dependents.
CREATE OR REPLACE FUNCTION {{schema}}.docket_workflow_release()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    failed boolean;
    stopped boolean;
BEGIN
    failed := EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE id = OLD.id);
    stopped := EXISTS (SELECT 1 FROM {{schema}}.docket_workflows
                       WHERE id = OLD.workflow_id AND cancelled_at IS NOT NULL);
    IF stopped THEN
        PERFORM {{schema}}.docket_workflow_cancel_children(OLD.id, true,
            format('workflow %s cancelled', OLD.workflow_id));
    ELSIF failed THEN
        PERFORM {{schema}}.docket_workflow_cancel_children(OLD.id, false,
            format('parent job %s failed', OLD.id));
        PERFORM {{schema}}.docket_workflow_ready(OLD.id, true, 'docket_' || TG_TABLE_SCHEMA);
    ELSE
        PERFORM {{schema}}.docket_workflow_ready(OLD.id, false, 'docket_' || TG_TABLE_SCHEMA);
    END IF;
    RETURN NULL;
END
$$;

