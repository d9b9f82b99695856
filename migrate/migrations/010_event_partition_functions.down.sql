DROP FUNCTION IF EXISTS {{schema}}.docket_drop_event_partition(date);
DROP FUNCTION IF EXISTS {{schema}}.docket_create_event_partition(date);
