DROP VIEW IF EXISTS {{schema}}.docket_event_status;
