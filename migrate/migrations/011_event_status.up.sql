-- The outbox relay's backlog, as docket status, the metrics and operators
-- read it: events committed and not yet acknowledged by the broker
-- (pending), the age of the oldest of them (the relay's lag), dead letters
-- and the keys they hold back, and the relays with a live lease. Every
-- count walks a partial index (pending, dead), never the published events.
CREATE OR REPLACE VIEW {{schema}}.docket_event_status AS
WITH oldest AS (
    SELECT created_at FROM {{schema}}.docket_events
    WHERE published_at IS NULL AND dead_at IS NULL
    ORDER BY id
    LIMIT 1
)
SELECT
    (SELECT count(*) FROM {{schema}}.docket_events WHERE published_at IS NULL AND dead_at IS NULL) AS pending,
    (SELECT created_at FROM oldest) AS oldest_pending_at,
    coalesce(extract(epoch FROM now() - (SELECT created_at FROM oldest)), 0)::double precision AS lag_seconds,
    (SELECT count(*) FROM {{schema}}.docket_events WHERE dead_at IS NOT NULL) AS dead,
    (SELECT count(DISTINCT key) FROM {{schema}}.docket_events WHERE dead_at IS NOT NULL AND blocks_key) AS blocked_keys,
    (SELECT count(*) FROM {{schema}}.docket_relays WHERE lease_until > now()) AS relays_live;
