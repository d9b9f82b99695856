ALTER TABLE {{schema}}.docket_workers DROP COLUMN IF EXISTS slots;
