-- Workflow signals, waits and timers. A workflow step may wait, after its
-- parents completed, for a named signal (docket.Client.Signal) with a
-- deadline, and may be held for a delay once it is released. The wait is
-- rows and columns, like the rest of a workflow: nothing sleeps, nothing
-- keeps a counter, no shared row is locked.
--
-- - docket_workflow_waits: what a step waits for, written at enqueue and
--   never changed (one row per step with a signal or a delay).
-- - docket_workflow_signals: the signals sent, one per workflow and name;
--   a signal sent before its step waits is kept here and found when the
--   step's parents are done.
-- - docket_jobs.wait_until: while a step waits for its signal, its deadline
--   (9999-12-31 without a timeout: 'infinity' would not scan into Go's
--   time.Time through database/sql, as Ent reads it); NULL while its
--   parents still run. A
--   step released by its signal has it NULL again; one released by its
--   deadline keeps it, which is how its handler learns it timed out.
--
-- Jobs outside workflows write no row here, fire no trigger of this file
-- (its WHEN needs workflow_id) and read nothing more in their claim (a CASE
-- on workflow_id).

CREATE TABLE IF NOT EXISTS {{schema}}.docket_workflow_waits (
    job_id      bigint   PRIMARY KEY,
    workflow_id bigint   NOT NULL REFERENCES {{schema}}.docket_workflows (id) ON DELETE CASCADE,
    signal      text,
    timeout     interval,
    on_timeout  text     NOT NULL DEFAULT 'fail' CHECK (on_timeout IN ('fail', 'run')),
    delay       interval,
    CHECK (signal IS NOT NULL OR delay IS NOT NULL)
);

-- Signal's look-up: the steps of a workflow that wait for a name.
CREATE INDEX IF NOT EXISTS docket_workflow_waits_signal_idx
    ON {{schema}}.docket_workflow_waits (workflow_id, signal)
    WHERE signal IS NOT NULL;

CREATE TABLE IF NOT EXISTS {{schema}}.docket_workflow_signals (
    workflow_id bigint      NOT NULL REFERENCES {{schema}}.docket_workflows (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    payload     jsonb,
    sent_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, name)
);

-- A nullable column without a default: a change of the catalog only.
ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS wait_until timestamptz;

-- The deadline sweep's walk: steps waiting for a signal, by deadline. A
-- row leaves the index when its step leaves 'waiting'.
CREATE INDEX IF NOT EXISTS docket_jobs_wait_until_idx
    ON {{schema}}.docket_jobs (wait_until)
    WHERE state = 'waiting' AND wait_until IS NOT NULL;

-- docket_workflow_gate runs after a workflow job left 'waiting' (made
-- ready or scheduled by docket_workflow_ready, the workflow sweep, Signal
-- or the deadline sweep) and holds it back when it has a wait:
--
-- - waiting for a signal that was sent (now or before): released, and
--   wait_until cleared;
-- - waiting for a signal not sent, past its deadline with policy 'run'
--   (the deadline sweep): released, wait_until kept as the handler's
--   "timed out" mark;
-- - waiting for a signal not sent otherwise: back to 'waiting' with its
--   deadline set (now + timeout, or 9999-12-31), if not set yet;
-- - released with a delay: scheduled at now + delay (or later, at its own
--   run_at).
--
-- Every path that releases a step updates the step's row first, so the row
-- lock orders it with a concurrent Signal (which locks the waiting steps'
-- rows before it looks at them): whichever commits second sees the other's
-- write.
CREATE OR REPLACE FUNCTION {{schema}}.docket_workflow_gate()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    w {{schema}}.docket_workflow_waits%ROWTYPE;
    hold boolean := false;
    signalled boolean := false;
BEGIN
    SELECT * INTO w FROM {{schema}}.docket_workflow_waits WHERE job_id = NEW.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF w.signal IS NOT NULL THEN
        signalled := EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_signals
                             WHERE workflow_id = NEW.workflow_id AND name = w.signal);
        hold := NOT signalled AND NOT (w.on_timeout = 'run' AND coalesce(NEW.wait_until <= now(), false));
    END IF;
    IF hold THEN
        UPDATE {{schema}}.docket_jobs
        SET state = 'waiting',
            wait_until = coalesce(NEW.wait_until,
                CASE WHEN w.timeout IS NULL THEN '9999-12-31 00:00:00+00'::timestamptz ELSE now() + w.timeout END)
        WHERE id = NEW.id;
    ELSIF signalled OR (w.delay IS NOT NULL AND NEW.run_at < now() + w.delay) THEN
        UPDATE {{schema}}.docket_jobs
        SET wait_until = CASE WHEN signalled THEN NULL ELSE wait_until END,
            run_at = CASE WHEN w.delay IS NULL THEN run_at ELSE greatest(run_at, now() + w.delay) END,
            state = CASE WHEN w.delay IS NULL OR run_at >= now() + w.delay THEN state ELSE 'scheduled' END
        WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER docket_jobs_workflow_gate
    AFTER UPDATE OF state ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (NEW.workflow_id IS NOT NULL AND OLD.state = 'waiting' AND NEW.state IN ('ready', 'scheduled'))
    EXECUTE FUNCTION {{schema}}.docket_workflow_gate();
