// Package pgbouncer holds the tests of Docket behind PgBouncer in
// transaction pooling mode: enqueue, the worker, schedules and the CLI
// through a private pgbouncer (internal/pgsrv's StartBouncer) in front of
// the test server. The supported setup they check is documented in
// docs/compatibility.md. The tests fail, never skip, when pgbouncer is not
// installed; .ci/run installs it.
package pgbouncer
