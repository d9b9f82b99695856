// Package outbox is Docket's transactional outbox: events written in the
// caller's transaction, next to the domain rows that cause them, for a relay
// (package outbox/relay) to publish to a broker once they commit; and the
// consumer's inbox, which makes a consumer's effects happen once.
//
// A [Client] serves one schema; docket.Client.Outbox returns the client's,
// or build one with [New]. It holds no connection: every method takes the
// handle to write through, so a publish joins the caller's transaction.
//
// # Publish
//
// [Client.Publish] and [Client.PublishMany] (one COPY) take a pgx
// transaction, connection or pool ([DB]); [Client.PublishSQL] a
// database/sql one ([SQLDB]), which is also how package ent publishes in an
// Ent transaction. Events go into docket_events (migration 007, one
// partition per UTC day). A keyed event takes its key's row lock in
// docket_event_keys until the transaction ends and draws its id under it,
// so one key's events are ordered by commit and numbered without gaps; in a
// REPEATABLE READ or SERIALIZABLE transaction a key another transaction
// published meanwhile fails with [ErrSerialization]. Bad input is refused
// with [ErrInvalidEvent] before anything is sent, so the caller's
// transaction stays usable. Committed events are announced on
// [Client.EventChannel], at most once per Config.NotifyDebounce.
//
// # Inbox
//
// [Client.Inbox] and [Client.InboxSQL] record a consumed message's id in the
// consumer's transaction and report repeats: the consumer's effects and the
// record commit together. [Client.PruneInbox] deletes old records.
//
// # Operators
//
// [Client.ListDeadEvents], [Client.ReplayDeadEvents],
// [Client.PurgeDeadEvents] triage the events a broker refused for good, and
// [Client.EventStatus] reads the relay's backlog (`docket relay dlq`,
// `docket relay status`). docs/outbox.md describes the guarantee (at least
// once, in commit order per key) and how to run the relay.
//
// Jobs are not here: enqueue with docket.Client, operate with package
// admin, migrate with package migrate.
package outbox
