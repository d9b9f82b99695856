package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

func jobsCommand() *command {
	return &command{
		name:    "jobs",
		summary: "cancel or retry one job",
		verbs: []*command{
			{name: "cancel", summary: "move a scheduled or ready job to the dead-letter table (reason cancelled)", args: "ID", flags: jobsCancel},
			{name: "retry", summary: "run a dead job again (replayed) or a scheduled one now", args: "ID", flags: jobsRetry},
		},
	}
}

func jobsCancel(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	note := fs.String("note", "cancelled by operator", "the error recorded on the cancelled job")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onJob(ctx, db, pos, func(client *outbox.Client, pool *pgxpool.Pool, id int64) error {
			if err := client.CancelJob(ctx, pool, id, *note); err != nil {
				return err
			}
			fmt.Fprintf(out, "job %d cancelled: it is in the dead-letter table\n", id)
			return nil
		})
	}
}

func jobsRetry(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onJob(ctx, db, pos, func(client *outbox.Client, pool *pgxpool.Pool, id int64) error {
			if err := client.RetryJob(ctx, pool, id); err != nil {
				return err
			}
			fmt.Fprintf(out, "job %d is ready to run\n", id)
			return nil
		})
	}
}

// onJob checks the one job id argument, connects and runs op.
func onJob(ctx context.Context, db dbFlags, pos []string, op func(*outbox.Client, *pgxpool.Pool, int64) error) error {
	if err := wantArgs(pos, 1, "one job id"); err != nil {
		return err
	}
	ids, err := jobIDs(pos)
	if err != nil {
		return err
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return op(client, pool, ids[0])
}
