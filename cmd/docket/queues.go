package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/docketq/docket/admin"
	"github.com/jackc/pgx/v5/pgxpool"
)

func queuesCommand() *command {
	return &command{
		name:    "queues",
		summary: "pause, resume or list paused queues",
		about: `A paused queue is claimed by no worker process from its next poll on
(within one poll interval); jobs already running finish. Only a queue in use
(a job live, dead or in history, a live worker serving it, or an earlier
pause) is paused or resumed: a name nothing uses is refused as a likely typo,
unless pause --create says to pause it before its first job.`,
		verbs: []*command{
			{name: "pause", summary: "stop workers claiming from a queue", args: "QUEUE", flags: queuesPause},
			{name: "resume", summary: "let workers claim from a paused queue again", args: "QUEUE", flags: queuesResume},
			{name: "list", summary: "list the paused queues", flags: queuesList},
		},
	}
}

func queuesPause(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	create := fs.Bool("create", false, "pause a queue nothing uses yet (no job, live worker or earlier pause names it), e.g. before its first deploy")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onQueue(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, name string) error {
			err := client.Queues().Pause(ctx, pool, name, admin.PauseOptions{Create: *create})
			if errors.Is(err, admin.ErrUnknownQueue) {
				return fmt.Errorf("queue %q is not in use (no job, live worker or earlier pause names it): check the name, or pass --create to pause it before its first job", name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "paused queue %s: workers stop claiming from it within one poll interval\n", name)
			return nil
		})
	}
}

func queuesResume(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		return onQueue(ctx, db, pos, func(client *admin.Client, pool *pgxpool.Pool, name string) error {
			err := client.Queues().Resume(ctx, pool, name)
			if errors.Is(err, admin.ErrUnknownQueue) {
				return fmt.Errorf("queue %q is not in use (no job, live worker or earlier pause names it): nothing to resume; check the name", name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "resumed queue %s\n", name)
			return nil
		})
	}
}

// onQueue checks the one queue name argument, connects and runs op.
func onQueue(ctx context.Context, db dbFlags, pos []string, op func(*admin.Client, *pgxpool.Pool, string) error) error {
	if err := wantArgs(pos, 1, "one queue name"); err != nil {
		return err
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return op(client, pool, pos[0])
}

func queuesList(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		paused, err := client.Queues().Paused(ctx, pool)
		if err != nil {
			return err
		}
		if *asJSON {
			list := []queueJSON{}
			for _, q := range paused {
				list = append(list, queueJSON{Queue: q, Paused: true})
			}
			return writeJSON(out, list, true)
		}
		if len(paused) == 0 {
			fmt.Fprintln(out, "no paused queues")
		}
		for _, q := range paused {
			fmt.Fprintf(out, "%s\tpaused\n", q)
		}
		return nil
	}
}
