-- Jobs without a tenant leave the tenant index. Only the tenant-capped claim
-- reads it, yet every insert of an untenanted job paid for an entry there:
-- about a fifth of a bulk COPY. The capped claim now finds the jobs without
-- a tenant through the claim index instead (see sqlClaimCapped).
--
-- "tenant <> ''" also keeps the plain claim off this index: it never states
-- that predicate, so the planner cannot pick the index for it.
DROP INDEX IF EXISTS {{schema}}.docket_jobs_tenant_idx;

CREATE INDEX IF NOT EXISTS docket_jobs_tenant_idx
    ON {{schema}}.docket_jobs (queue, tenant, priority DESC, ready_seq)
    WHERE state = 'ready' AND tenant <> '';
