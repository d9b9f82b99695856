CREATE INDEX IF NOT EXISTS docket_events_id_idx
    ON {{schema}}.docket_events (id);
