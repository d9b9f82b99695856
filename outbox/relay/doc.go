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
// lease on its share of docket_relay_parts (64 / live relays, one more for
// the relays first by id when that does not divide, so that the shares add
// up to 64), renewed every LeaseTTL/3; a relay that stops renewing loses
// its partitions to the others after LeaseTTL, and one that stops cleanly
// gives them back at once. Only the holder of a partition publishes its events,
// and only while its lease holds may it mark them published.
//
// # Identity and restarts
//
// A relay holds an ID (Config.ID, by default the first free
// "hostname/schema/N") through a session-level advisory lock on a
// connection of its own, and its row in docket_relays and its partitions'
// owner are derived from the ID. At most one live relay holds an ID; a
// second one waits. When a relay's process dies, PostgreSQL ends its
// session and frees the ID at once, so a relay restarted under the same ID
// takes it and renews the partitions the dead one held under lease instead
// of waiting for the lease to end. Because the session that held the ID may
// also end while its relay lives (a cut connection, a failover), the lease
// statements run on that session, a relay checks every LeaseTTL/20 that its
// session still holds the ID and stops publishing when it does not, and a
// relay that takes back partitions still under lease publishes them only
// LeaseTTL/5 after it took the ID: by then the previous holder has
// stopped.
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
// # The fetch floor
//
// A fetch starts at the relay's floor, an id below which no event of its
// partitions is pending or can still commit, so that it does not walk the
// index entries of the events published since the last vacuum. The floor
// moves only once every transaction in progress when the highest id drawn
// was read has ended; replaying or purging dead events, and every lease
// renewal, take it back to the start, as does a fetch that finds a key no
// longer blocked that a dead letter blocked when the floor was set (see
// floor.go).
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
