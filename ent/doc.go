// Package ent integrates Docket with Ent (entgo.io/ent): enqueue jobs inside
// an Ent transaction or from an Ent mutation hook, atomically with your Ent
// writes, and read Docket's tables with Ent's typed builders.
//
// Its name clashes with entgo.io/ent and with your generated package, so
// import it under another name:
//
//	import docketent "github.com/docketq/docket/ent"
//
// # Setup
//
// Generate your Ent package with the sql/execquery feature, which gives the
// client and its *Tx the ExecContext and QueryContext methods Docket writes
// through (an Ent transaction exposes neither its pgx.Tx nor its *sql.Tx):
//
//	//go:generate go run entgo.io/ent/cmd/ent generate --feature sql/execquery ./schema
//
// or, with entc.go, gen.Config{Features: []gen.Feature{gen.FeatureExecQuery}}.
// Nothing else is generated: the functions here are generic over your
// generated types, and use no reflection.
//
// Serve Docket's workers and Ent from one pgx pool: stdlib.OpenDBFromPool
// turns it into the *sql.DB Ent's driver needs.
//
//	cfg, _ := docket.ParsePoolConfig(url) // connect and keepalive timeouts
//	pool, _ := pgxpool.NewWithConfig(ctx, cfg)
//	drv := entsql.OpenDB(dialect.Postgres, stdlib.OpenDBFromPool(pool))
//	client := ent.NewClient(ent.Driver(drv))
//	docketClient, _ := docket.NewClient(pool, docket.Config{Registry: reg}) // what Enqueue takes
//
// # Enqueue in a transaction
//
// [Enqueue] and [EnqueueMany] take your *ent.Tx ([Tx]; a client does not
// fit, so a job can never be written outside the transaction by mistake):
//
//	err := docketent.WithTx(ctx, client, func(tx *ent.Tx) error {
//		s, err := tx.Shipment.Create().SetCarrier("ups").Save(ctx)
//		if err != nil {
//			return err
//		}
//		_, err = docketent.Enqueue(ctx, docketClient, tx, TrackShipment{ID: s.ID},
//			docket.Opts{UniqueKey: fmt.Sprint("track:", s.ID)})
//		return err
//	})
//
// Both commit or neither does. The job gets its kind's registered defaults,
// as on every enqueue path, and a client with a registry refuses a kind
// without a handler (docket.ErrUnknownKind), writing nothing. [WithTx] rolls back on an error or a panic.
// Unique keys behave exactly as through pgx: a key held by an in-flight job
// inserts nothing and reports that job's id with Duplicate set. Payloads are
// sent as JSON text, so database/sql stores them as jsonb objects, not as
// bytea.
//
// # Enqueue from mutation hooks
//
// [Hook] builds an ent.Hook that enqueues jobs in the transaction of the
// mutation it is attached to, after the mutation succeeds (so a created
// entity's id is known):
//
//	client.Shipment.Use(hook.On(docketent.Hook(docketClient,
//		func(ctx context.Context, m *ent.ShipmentMutation, v ent.Value) ([]docket.Item, error) {
//			s := v.(*ent.Shipment)
//			return []docket.Item{{Args: Notify{ShipmentID: s.ID}}}, nil
//		}), ent.OpCreate))
//
// A hooked mutation outside a transaction fails with [ErrNoTx] before it
// runs, so nothing is written: a hook cannot open a transaction around a
// mutation that is already bound to its client, and writing the row and
// the job separately is the dual write this package exists to avoid.
//
// # Docket's tables as Ent models
//
// Package github.com/docketq/docket/ent/entgen is a generated Ent client of
// Docket's tables (docket_jobs, docket_jobs_done, docket_jobs_dead,
// docket_schedules), from the schemas in package
// github.com/docketq/docket/ent/schema. Use it for dashboards and admin
// reads over the same *sql.DB:
//
//	jobs := entgen.NewClient(entgen.Driver(drv))
//	n, err := jobs.Job.Query().Where(job.StateEQ(job.StateReady), job.Queue("mail")).Count(ctx)
//
// Its table names are unqualified: when Docket's tables are not in
// "public", put their schema on the connection's search_path. The schemas
// carry entsql.Skip, so Ent's migration never touches Docket's tables;
// Docket's migrator owns them, and a test checks that the Ent schemas and
// the migrations describe the same columns and indexes.
package ent
