ALTER TABLE {{schema}}.docket_jobs DROP COLUMN IF EXISTS claim_id;

DROP SEQUENCE IF EXISTS {{schema}}.docket_claims_seq;
