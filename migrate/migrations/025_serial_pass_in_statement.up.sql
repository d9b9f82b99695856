-- A completion that hands its holders' keys on in its own statement
-- (Queue.Complete for a batch with serial jobs) marks its transaction with
-- docket.serial_pass ('statement', or 'handoff' when the same transaction
-- also claims the heads it made ready), and the per-row pass skips those rows:
-- one set-based hand-off per batch instead of a PL/pgSQL call, an advisory
-- lock and three statements per job. Every other way a holder leaves the
-- table (outcomes written in a caller's transaction, dead letters,
-- cancels, deletes) still passes the key through the trigger.
DROP TRIGGER IF EXISTS docket_jobs_serial_pass ON {{schema}}.docket_jobs;
CREATE TRIGGER docket_jobs_serial_pass
    AFTER DELETE ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (OLD.serial_seq IS NOT NULL AND OLD.state <> 'waiting'
        AND coalesce(current_setting('docket.serial_pass', true), '') = '')
    EXECUTE FUNCTION {{schema}}.docket_serial_pass();
