// Package pgbouncer holds the tests of Docket behind PgBouncer in
// transaction pooling mode, through a private pgbouncer (internal/pgsrv's
// StartBouncer) in front of the test server: the recipe of
// docs/compatibility.md ("PgBouncer") end to end — migrations, enqueue, the
// worker, a schedule, a workflow, notifications through ListenURL and the
// CLI — and, with the plain URL a user pastes, that every error names the
// fix and the worker warns that notifications do not reach it. Without a
// pgbouncer binary the tests are skipped with the reason, except under CI
// (CI set), where they fail: .ci/run installs pgbouncer.
package pgbouncer
