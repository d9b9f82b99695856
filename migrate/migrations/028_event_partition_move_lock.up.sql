-- A day partition's creation keeps readers out while it moves the day's
-- events from the default partition into it. Under 010's SHARE ROW
-- EXCLUSIVE lock a reader could plan its statement before the move
-- committed and read after it: EventStatus then counted none of the moved
-- events as pending, and a relay's fetch or mark could miss them. The lock
-- is held for the move and the attach, once per day, and the relay's
-- maintenance gives up after a short lock_timeout and tries again later.
-- Everything else is as in 010.
CREATE OR REPLACE FUNCTION {{schema}}.docket_create_event_partition(day date)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, {{schema}}
AS $$
DECLARE
    part text;
    lo text;
    hi text;
BEGIN
    IF day IS NULL OR day < DATE '1970-01-01' OR day > DATE '9999-12-30' THEN
        RAISE EXCEPTION 'docket: event partition day % out of range', day
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    part := 'docket_events_' || to_char(day, 'YYYYMMDD');
    IF EXISTS (
        SELECT 1 FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = '{{schema}}.docket_events'::regclass AND c.relname = part
    ) THEN
        RETURN false;
    END IF;
    lo := to_char(day, 'YYYY-MM-DD') || ' 00:00:00+00';
    hi := to_char(day + 1, 'YYYY-MM-DD') || ' 00:00:00+00';
    -- ACCESS EXCLUSIVE, not only against writes: a statement planned
    -- before this commits, run with a snapshot taken after, reads the
    -- default partition emptied and not the day's partition, and sees none
    -- of the moved events (010 took SHARE ROW EXCLUSIVE, which let readers
    -- in).
    LOCK TABLE {{schema}}.docket_events IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('CREATE TABLE {{schema}}.%I (LIKE {{schema}}.docket_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
    EXECUTE format('WITH moved AS (DELETE FROM {{schema}}.docket_events_default WHERE created_at >= %L AND created_at < %L RETURNING *) '
        'INSERT INTO {{schema}}.%I SELECT * FROM moved', lo, hi, part);
    EXECUTE format('ALTER TABLE {{schema}}.docket_events ATTACH PARTITION {{schema}}.%I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
    RETURN true;
END
$$;
