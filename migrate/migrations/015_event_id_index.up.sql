-- Events are no longer indexed by id as a whole: every event paid for an
-- entry on insert, and its mark as published (an update that cannot be HOT,
-- since published_at is in the pending index's predicate) paid for another.
-- Marking finds pending events through docket_events_pending_idx; replay
-- and purge touch only dead letters, which are few and found through
-- docket_events_dead_idx. Measured: a relay's marks take a quarter less
-- time and write 16% less WAL without it.
DROP INDEX IF EXISTS {{schema}}.docket_events_id_idx;
