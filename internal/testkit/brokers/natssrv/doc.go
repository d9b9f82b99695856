// Package natssrv finds or starts a NATS server with JetStream for tests,
// benchmarks and examples, by the same "found or started" rule as package
// pgsrv for PostgreSQL.
//
// [Discover] returns the server on 127.0.0.1:4222 when it answers with
// JetStream enabled (DOCKET_NATS=private skips it), else a private one.
// [Start] always starts a private `nats-server -js` on a free 127.0.0.1
// port with its store in a temporary directory: tests that restart or kill
// the broker use one of those, never the shared server. The binary is
// nats-server on PATH or in /usr/sbin (Debian's nats-server package).
package natssrv
