DROP TABLE IF EXISTS {{schema}}.docket_inbox;
DROP TABLE IF EXISTS {{schema}}.docket_relay_parts;
DROP TABLE IF EXISTS {{schema}}.docket_relays;
DROP TABLE IF EXISTS {{schema}}.docket_event_keys;
DROP TABLE IF EXISTS {{schema}}.docket_events;
DROP SEQUENCE IF EXISTS {{schema}}.docket_events_id_seq;
