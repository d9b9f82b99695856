-- Drops the claim that holds places (026's stays) and the places.
DROP FUNCTION IF EXISTS {{schema}}.docket_claim_limited(
    text, text[], text[], integer, uuid, bigint, text[], smallint[], bigint[], bigint[], integer);
DROP TABLE IF EXISTS {{schema}}.docket_limit_places;
