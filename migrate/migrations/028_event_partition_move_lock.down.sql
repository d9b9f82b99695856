-- Restores 010's docket_create_event_partition.
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
