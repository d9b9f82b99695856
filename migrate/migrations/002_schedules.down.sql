DROP TABLE IF EXISTS {{schema}}.docket_schedules;
