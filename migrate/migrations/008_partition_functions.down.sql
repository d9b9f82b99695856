DROP FUNCTION IF EXISTS {{schema}}.docket_drop_history_partition(date);
DROP FUNCTION IF EXISTS {{schema}}.docket_create_history_partition(date);
