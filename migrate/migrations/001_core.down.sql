DROP TABLE IF EXISTS {{schema}}.docket_jobs_dead;
DROP TABLE IF EXISTS {{schema}}.docket_jobs_done;
DROP TABLE IF EXISTS {{schema}}.docket_jobs;
DROP SEQUENCE IF EXISTS {{schema}}.docket_jobs_id_seq;
DROP SEQUENCE IF EXISTS {{schema}}.docket_jobs_ready_seq;
