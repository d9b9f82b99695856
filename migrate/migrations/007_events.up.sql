-- Events for the outbox relay (package outbox/relay), the relay's ownership
-- of key partitions, and the consumers' inbox.

-- Event ids are drawn from their own sequence. A keyed event draws its id
-- only once it holds its key's row in docket_event_keys (see sqlPublish), so
-- among the events of one key, id order is commit order.
CREATE SEQUENCE IF NOT EXISTS {{schema}}.docket_events_id_seq AS bigint;

-- One row per event. Pending: published_at and dead_at both NULL. The relay
-- sets published_at once the broker acknowledged; a message the broker
-- refused permanently MaxAttempts times gets dead_at (a dead letter), and
-- blocks_key when it holds back the later events of its key. Published rows
-- stay until retention drops their day's partition: no mass DELETE.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_events (
    id           bigint      NOT NULL,
    topic        text        NOT NULL,
    key          text,
    seq          bigint,
    part         smallint    NOT NULL CHECK (part >= 0 AND part < 64),
    payload      bytea       NOT NULL,
    headers      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    last_error   text,
    published_at timestamptz,
    dead_at      timestamptz,
    blocks_key   boolean     NOT NULL DEFAULT false,
    CONSTRAINT docket_events_keyed_seq CHECK ((key IS NULL) = (seq IS NULL))
) PARTITION BY RANGE (created_at);

-- Rows of days the relay has not created a partition for yet land here, so
-- Publish never fails for want of a partition.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_events_default
    PARTITION OF {{schema}}.docket_events DEFAULT;

-- The relay's fetch: pending events in id order.
CREATE INDEX IF NOT EXISTS docket_events_pending_idx
    ON {{schema}}.docket_events (id)
    WHERE published_at IS NULL AND dead_at IS NULL;

-- Marking, replay and purge find an event by id.
CREATE INDEX IF NOT EXISTS docket_events_id_idx
    ON {{schema}}.docket_events (id);

-- Dead letters: listed by operators, and looked up by key to hold back the
-- events of a blocked key.
CREATE INDEX IF NOT EXISTS docket_events_dead_idx
    ON {{schema}}.docket_events (key)
    WHERE dead_at IS NOT NULL;

-- The per-key sequence. Publish of a keyed event increments its key's row
-- and holds that row lock until its transaction ends, so the producers of
-- one key are ordered by commit, and a rollback leaves no gap.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_event_keys (
    key text   NOT NULL PRIMARY KEY,
    seq bigint NOT NULL
);

-- Relays register here and renew their lease; a relay whose lease expired
-- is gone, and its partitions are taken over.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_relays (
    id          uuid        NOT NULL PRIMARY KEY,
    name        text        NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz NOT NULL
);

-- Events are spread over 64 partitions (by key hash, or by id when keyless);
-- each partition is published by the one relay that holds its lease.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_relay_parts (
    part        smallint    NOT NULL PRIMARY KEY,
    owner       uuid,
    lease_until timestamptz
);

INSERT INTO {{schema}}.docket_relay_parts (part)
SELECT p FROM generate_series(0, 63) p
ON CONFLICT (part) DO NOTHING;

-- The consumers' inbox: a message id recorded in the consumer's own
-- transaction makes its effects happen once.
CREATE TABLE IF NOT EXISTS {{schema}}.docket_inbox (
    consumer    text        NOT NULL,
    message_id  text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);

CREATE INDEX IF NOT EXISTS docket_inbox_received_idx
    ON {{schema}}.docket_inbox (received_at);
