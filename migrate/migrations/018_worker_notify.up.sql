-- What a worker process found when it last checked that its LISTEN
-- connection hears a NOTIFY it sent itself: NULL when notifications arrive
-- (or the check is off or still running), else why not. `docket status`
-- warns of live workers that pick up jobs only by polling.
ALTER TABLE {{schema}}.docket_workers ADD COLUMN IF NOT EXISTS notify_error text;
