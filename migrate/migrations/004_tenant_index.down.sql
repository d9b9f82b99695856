DROP INDEX IF EXISTS {{schema}}.docket_jobs_tenant_idx;

CREATE INDEX IF NOT EXISTS docket_jobs_tenant_idx
    ON {{schema}}.docket_jobs (queue, tenant, priority DESC, ready_seq)
    WHERE state = 'ready' AND tenant >= '';
