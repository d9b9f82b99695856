-- ready_seq draws from the id sequence, so that a bulk insert sets a new
-- job's ready_seq to its id and draws one number per job instead of two.
-- Claims only need ready_seq to grow as jobs become ready, which one
-- sequence gives as well as two. The id sequence first moves past every
-- number the old sequence gave, so no new ready_seq lands behind a
-- claimer's cursor.
--
-- docket_jobs_ready_seq is left in place, unused: workers of the previous
-- version still running during a rolling upgrade keep drawing from it.
DO $$
BEGIN
    IF to_regclass('{{schema}}.docket_jobs_ready_seq') IS NOT NULL THEN
        PERFORM setval('{{schema}}.docket_jobs_id_seq', GREATEST(
            (SELECT last_value FROM {{schema}}.docket_jobs_id_seq),
            (SELECT last_value FROM {{schema}}.docket_jobs_ready_seq)));
    END IF;
END
$$;

ALTER TABLE {{schema}}.docket_jobs
    ALTER COLUMN ready_seq SET DEFAULT nextval('{{schema}}.docket_jobs_id_seq');
