-- Event partitions through SECURITY DEFINER functions, as migration 008
-- does for history: a relay running as the application role makes and
-- drops the day partitions of docket_events without owning the table. The
-- functions take a date, never a name, pin search_path, and act only on
-- docket_events_YYYYMMDD attached to docket_events.
--
-- Callers (outbox/relay/partitions.go) hold the schema's event partition
-- advisory lock and a short lock_timeout around each call.

-- docket_create_event_partition creates and attaches the partition for the
-- UTC day "day" and returns true, or returns false when it is attached
-- already. Rows the default partition holds for that day (written while no
-- relay had made it) move into it first: PostgreSQL would refuse to attach
-- it over them. They keep their ids, so the relay sees no change. The LOCK
-- waits out publishes in flight: ATTACH alone lets an insert routed to the
-- default partition before it fail a check after it, aborting the
-- producer's transaction.
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
    LOCK TABLE {{schema}}.docket_events IN SHARE ROW EXCLUSIVE MODE;
    EXECUTE format('CREATE TABLE {{schema}}.%I (LIKE {{schema}}.docket_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
    EXECUTE format('WITH moved AS (DELETE FROM {{schema}}.docket_events_default WHERE created_at >= %L AND created_at < %L RETURNING *) '
        'INSERT INTO {{schema}}.%I SELECT * FROM moved', lo, hi, part);
    EXECUTE format('ALTER TABLE {{schema}}.docket_events ATTACH PARTITION {{schema}}.%I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
    RETURN true;
END
$$;

-- docket_drop_event_partition drops the attached partition for the UTC day
-- "day" when none of its events is pending or dead, and returns true; it
-- returns false when there is no such partition or it still holds events
-- to publish. The LOCK keeps any from being written meanwhile.
CREATE OR REPLACE FUNCTION {{schema}}.docket_drop_event_partition(day date)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, {{schema}}
AS $$
DECLARE
    part text;
    pending boolean;
BEGIN
    IF day IS NULL OR day < DATE '1970-01-01' OR day > DATE '9999-12-30' THEN
        RAISE EXCEPTION 'docket: event partition day % out of range', day
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    part := 'docket_events_' || to_char(day, 'YYYYMMDD');
    IF NOT EXISTS (
        SELECT 1 FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = '{{schema}}.docket_events'::regclass AND c.relname = part
    ) THEN
        RETURN false;
    END IF;
    EXECUTE format('LOCK TABLE {{schema}}.%I IN SHARE MODE', part);
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM {{schema}}.%I WHERE published_at IS NULL)', part) INTO pending;
    IF pending THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE {{schema}}.%I', part);
    RETURN true;
END
$$;

-- Only roles granted EXECUTE (docket migrate grant) may call them.
REVOKE ALL ON FUNCTION {{schema}}.docket_create_event_partition(date) FROM PUBLIC;
REVOKE ALL ON FUNCTION {{schema}}.docket_drop_event_partition(date) FROM PUBLIC;
