// Package pgsrv finds a PostgreSQL server to talk to, or starts a private
// throw-away one. It is the single place that decides which database tests,
// examples and `docket demo` use.
//
// # Discovery order
//
// [Discover] tries, in order:
//
//  1. DATABASE_URL, if set, used as is (it is not probed).
//  2. A server on 127.0.0.1:5432 as user postgres, database postgres, without
//     a password (trust auth), probed with a 2 s timeout.
//     [DiscoverWithRoom] passes it over when it has fewer connections free
//     than its caller needs.
//  3. A private cluster started from the local PostgreSQL binaries (initdb,
//     pg_ctl, postgres), looked up on PATH and then under
//     /usr/lib/postgresql/*/bin, highest version first. See [StartCluster].
//  4. Otherwise an error that says how to install PostgreSQL.
//
// The environment variable DOCKET_PG narrows the choice:
//
//	DOCKET_PG=private  always start a private cluster (skips 1 and 2)
//	DOCKET_PG=server   only the server on 127.0.0.1:5432 (skips 1 and 3)
//	DOCKET_PG=""/auto  the full order above
//
// # Private clusters
//
// A private cluster lives in a fresh temporary directory: the data directory,
// the server log (postgres.log) and the unix socket. It listens on 127.0.0.1
// on a free TCP port, trusts every local connection, runs with fsync=off and
// full_page_writes=off (test data is disposable) and max_connections=200.
// [Cluster.Stop] stops it and removes the directory. Its data directory is
// a copy of a template that initdb made once for the same binaries and is
// kept in the system's temporary directory (docket-pg-template-*), as a
// copy takes a fraction of initdb's seconds.
//
// initdb, pg_ctl and postgres refuse to run as root. When the calling process
// is root, they run as the OS user postgres (or nobody, if there is no
// postgres user), which is given the temporary directory.
//
// The server shares the caller's process group, so an interrupted test run
// (Ctrl-C) stops it too; only its temporary directory is left behind then.
//
// Tests that restart or kill the database must use [StartCluster], never the
// shared server that [Discover] may return.
package pgsrv
