// Package dockettest helps users of Docket test their own code: a fresh
// database schema per test, assertions on the jobs their code enqueued, one
// job run inline through its handler, and schedules under a controlled
// clock.
//
// # A database per test
//
// [NewDB] finds PostgreSQL ($DATABASE_URL, else 127.0.0.1:5432 as user
// postgres, else a private cluster started from the installed PostgreSQL
// binaries), creates a schema, runs Docket's migrations in it and returns a
// pool whose search_path is that schema with a client of it. The
// schema is dropped when the test ends. Pass the service's registry with
// [WithRegistry] and the client enqueues as the service's own does: each
// kind's registered queue, priority and attempts, and a kind without a
// handler refused. Without it the client is an enqueue-only one: any kind,
// the built-in defaults. Call [Main] from TestMain so that a private
// cluster is stopped after the tests:
//
//	func TestMain(m *testing.M) { dockettest.Main(m) }
//
//	func TestSignup(t *testing.T) {
//		db := dockettest.NewDB(t, dockettest.WithRegistry(app.Registry()))
//		tx, _ := db.Pool.Begin(ctx)
//		defer tx.Rollback(ctx)
//		if err := app.Signup(ctx, tx, db.Client, "ada@example.com"); err != nil {
//			t.Fatal(err)
//		}
//		// Signup sets no queue: "mail" is the one the kind was registered with.
//		dockettest.RequireEnqueued(t, tx, WelcomeArgs{Email: "ada@example.com"},
//			&dockettest.RequireOpts{Queue: "mail"})
//	}
//
// # Assertions
//
// [RequireEnqueued], [RequireNotEnqueued] and [RequireManyEnqueued] read the
// jobs table through a pgx transaction, connection or pool, so they see what
// an uncommitted transaction enqueued. A job matches when its kind is the
// expected args' kind, its payload contains the expected args' JSON object
// (jsonb containment: fields left out of the JSON are not compared), and
// its queue, priority, keys and run time are those [RequireOpts] asks for.
// A failure lists the jobs that were enqueued; only payloads of the kind
// asked for are shown.
//
// # Running a job
//
// [Work] runs one job through its registered handler with the worker's
// middleware, timeout, panic recovery and outcome rules, and returns the
// [Result]: completed, retried after the kind's backoff, snoozed, cancelled
// or dead. It needs no worker and, for plain handlers, no database.
//
// # Schedules
//
// [NextFires] lists a spec's next fire times in a time zone. [NewSchedules]
// on a [Clock] registers schedules and, with [Schedules.CompleteRun] standing
// in for the worker that completes each run, walks a schedule through its
// runs.
package dockettest
