// Package relay publishes committed outbox events to a message broker, at
// least once and in commit order per key.
//
// A Publisher is the broker side: one small package per broker implements
// it (natsrelay for NATS JetStream), so an application compiles only the
// client it uses.
//
// # Partitions and leases
//
// Events are spread over 64 partitions: a hash of the key, or the id for
// events without key. Each Relay registers in docket_relays and holds a
// lease on its fair share of docket_relay_parts (ceil(64 / live relays)),
// renewed every LeaseTTL/3; a relay that stops renewing loses its
// partitions to the others after LeaseTTL, and one that stops cleanly gives
// them back at once. Only the holder of a partition publishes its events,
// and only while its lease holds may it mark them published.
//
// # Rounds and waves
//
// A round fetches the oldest pending events of the relay's partitions in
// id order (for one key, commit order) and hands them to the Publisher in
// waves of at most one message per key: a key's next message goes out only
// after the broker acknowledged the previous one, so pipelining inside a
// Publisher cannot reorder a key. Acknowledged events are marked published
// in the same round trip that fetches the next ones, and a full round
// fetches the next while it publishes (used only when every message of the
// round was acknowledged); a permanent refusal (Permanent) counts an
// attempt, and after MaxAttempts the event becomes a dead letter, holding
// back its key unless SkipDead; a transient failure stops the round and the
// relay backs off with jitter.
//
// # Waking up
//
// Publishers announce committed events on the schema's event channel, at
// most once per debounce window, and an idle relay LISTENs there on a
// connection of its own, so an event is usually on its way within
// milliseconds of its commit; after a wake-up the relay looks again once
// the window has passed. Without LISTEN (DisableNotify, a transaction
// pooler, a lost connection) it polls every PollInterval.
//
// # Retention
//
// Every relay creates the next days' partitions of docket_events and drops
// the partitions past Retention whose events were all published.
package relay
