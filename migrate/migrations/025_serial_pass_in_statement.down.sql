DROP TRIGGER IF EXISTS docket_jobs_serial_pass ON {{schema}}.docket_jobs;
CREATE TRIGGER docket_jobs_serial_pass
    AFTER DELETE ON {{schema}}.docket_jobs
    FOR EACH ROW
    WHEN (OLD.serial_seq IS NOT NULL AND OLD.state <> 'waiting')
    EXECUTE FUNCTION {{schema}}.docket_serial_pass();
