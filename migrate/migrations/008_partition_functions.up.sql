-- History partitions through two SECURITY DEFINER functions, so that the
-- application role needs no DDL rights: the functions run as their owner
-- (the role that applied this migration, which owns docket_jobs_done) and
-- make or drop only docket_jobs_done_YYYYMMDD, a name derived from a date,
-- never from text the caller passes. search_path is pinned so that nothing
-- the caller creates can shadow a name they use. A deployment where one
-- role owns everything calls them too: the result is the same.
--
-- Callers (internal/engine/queue/partitions.go) hold the schema's partition
-- advisory lock and a short lock_timeout around each call.

-- docket_create_history_partition creates and attaches the partition for
-- the UTC day "day" and returns true, or returns false when it is attached
-- already.
CREATE OR REPLACE FUNCTION {{schema}}.docket_create_history_partition(day date)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, {{schema}}
AS $$
DECLARE
    part text;
BEGIN
    -- Four-digit years keep the name's date part exactly eight digits.
    IF day IS NULL OR day < DATE '1970-01-01' OR day > DATE '9999-12-30' THEN
        RAISE EXCEPTION 'docket: history partition day % out of range', day
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    part := 'docket_jobs_done_' || to_char(day, 'YYYYMMDD');
    IF EXISTS (
        SELECT 1 FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = '{{schema}}.docket_jobs_done'::regclass AND c.relname = part
    ) THEN
        RETURN false;
    END IF;
    -- Created, then attached: ATTACH takes a lock on the parent that does
    -- not block completions, where CREATE TABLE ... PARTITION OF would
    -- block them all while it waits and runs.
    EXECUTE format('CREATE TABLE IF NOT EXISTS {{schema}}.%I (LIKE {{schema}}.docket_jobs_done INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
    EXECUTE format('ALTER TABLE {{schema}}.docket_jobs_done ATTACH PARTITION {{schema}}.%I FOR VALUES FROM (%L) TO (%L)',
        part, to_char(day, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
    RETURN true;
END
$$;

-- docket_drop_history_partition drops the attached partition for the UTC
-- day "day" and returns true, or returns false when there is none.
CREATE OR REPLACE FUNCTION {{schema}}.docket_drop_history_partition(day date)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, {{schema}}
AS $$
DECLARE
    part text;
BEGIN
    IF day IS NULL OR day < DATE '1970-01-01' OR day > DATE '9999-12-30' THEN
        RAISE EXCEPTION 'docket: history partition day % out of range', day
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    part := 'docket_jobs_done_' || to_char(day, 'YYYYMMDD');
    -- Only a table attached to the history table is dropped, never another
    -- one that happens to bear the name.
    IF NOT EXISTS (
        SELECT 1 FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = '{{schema}}.docket_jobs_done'::regclass AND c.relname = part
    ) THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE {{schema}}.%I', part);
    RETURN true;
END
$$;

-- Only roles granted EXECUTE (docket migrate grant) may call them.
REVOKE ALL ON FUNCTION {{schema}}.docket_create_history_partition(date) FROM PUBLIC;
REVOKE ALL ON FUNCTION {{schema}}.docket_drop_history_partition(date) FROM PUBLIC;
