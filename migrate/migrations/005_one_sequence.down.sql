SELECT setval('{{schema}}.docket_jobs_ready_seq', GREATEST(
    (SELECT last_value FROM {{schema}}.docket_jobs_id_seq),
    (SELECT last_value FROM {{schema}}.docket_jobs_ready_seq)));

ALTER TABLE {{schema}}.docket_jobs
    ALTER COLUMN ready_seq SET DEFAULT nextval('{{schema}}.docket_jobs_ready_seq');
