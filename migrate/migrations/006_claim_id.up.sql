-- Every claim draws one number from docket_claims_seq and writes it to the
-- jobs it takes, in claim_id. Statements that act on a running job
-- (heartbeat, complete, fail, snooze, dead-letter, release) match the
-- job's id and the claim_id of the run they speak for, so a run that lost
-- its lease changes nothing even when the same worker process has claimed
-- the job again since. locked_by alone cannot tell those two runs apart.
--
-- The column is in no index: writing it is free for a claim, which rewrites
-- the row anyway. It is left as it is when the job leaves running; only
-- running rows are ever matched by it.
CREATE SEQUENCE IF NOT EXISTS {{schema}}.docket_claims_seq AS bigint;

ALTER TABLE {{schema}}.docket_jobs ADD COLUMN IF NOT EXISTS claim_id bigint;

ALTER SEQUENCE {{schema}}.docket_claims_seq OWNED BY {{schema}}.docket_jobs.claim_id;
