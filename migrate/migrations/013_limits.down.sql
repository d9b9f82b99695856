DROP FUNCTION IF EXISTS {{schema}}.docket_claim_limited(text, text[], text[], integer, uuid, bigint, text[], smallint[], bigint[], bigint[]);
DROP FUNCTION IF EXISTS {{schema}}.docket_limit_of(text, text);
DROP TABLE IF EXISTS {{schema}}.docket_limit_buckets;
DROP TABLE IF EXISTS {{schema}}.docket_limits;
