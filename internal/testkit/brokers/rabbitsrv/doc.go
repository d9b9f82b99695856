// Package rabbitsrv finds or starts a RabbitMQ broker for tests, by the
// same "found or started" rule as package pgsrv for PostgreSQL.
//
// [Discover] returns the broker of $DOCKET_RABBITMQ_URL, else the one on
// 127.0.0.1:5672 (guest/guest) when it answers (DOCKET_RABBITMQ=private
// skips it), else a private one. [Start] always starts a private node from
// the installed rabbitmq-server (Debian's rabbitmq-server package): its
// own node name, AMQP and distribution ports on 127.0.0.1, no plugins, and
// its data, logs and Erlang cookie in a temporary directory. Tests that
// restart or kill the broker use a private node, never the shared one.
//
// Erlang's port mapper (epmd) is shared by every node of the machine: when
// none runs, the first node starts one, and it outlives the node.
package rabbitsrv
