// Package pgtest gives each test package its own PostgreSQL database, so
// packages run in parallel against one server and leave nothing behind.
//
// # Use
//
// Call [Main] from the package's TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Main finds PostgreSQL with [pgsrv.DiscoverWithRoom] (DATABASE_URL, then
// 127.0.0.1:5432 if it has 200 connections free, then a private cluster;
// DOCKET_PG=private or
// DOCKET_PG=server force one of them), creates a database named
// docket_test_<package>_<random>, runs the tests, drops the database and
// stops a private cluster if it started one. If no PostgreSQL can be found,
// the test binary fails: tests never skip silently. The worker processes of
// a fuzzing run (go test -fuzz) work in their coordinator's database: they
// find no server and create no database of their own.
//
// Inside a test:
//
//   - [Pool] and [PoolN] open a pool on the package database, closed when
//     the test ends. Pools are capped (8 connections by default) so that
//     parallel packages do not exhaust the server's max_connections.
//   - [Schema] creates a fresh schema, dropped when the test ends, for tests
//     that commit and must not see each other's rows. Point a connection at
//     it with search_path (pgxpool.Config.ConnConfig.RuntimeParams) or by
//     qualifying names.
//   - [URL] and [Server] give the package database's connection string and
//     the server itself, e.g. to create more databases.
//
// Tests that restart or kill the database must start their own cluster with
// [pgsrv.StartCluster], never touch the server returned here.
//
// # Goroutine leaks
//
// After a successful run, Main waits up to 2 s for goroutines started by
// Docket code (any frame, or the creator, in module github.com/docketq/docket)
// to end. If some remain, it prints their stacks and the test binary fails.
// Goroutines of the runtime, the testing package and libraries that Docket
// code did not start are ignored.
package pgtest
