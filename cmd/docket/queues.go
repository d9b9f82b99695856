package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/docketq/docket/outbox"
)

func queuesCommand() *command {
	return &command{
		name:    "queues",
		summary: "pause, resume or list paused queues",
		about: `A paused queue is claimed by no worker process from its next poll on
(within one poll interval); jobs already running finish.`,
		verbs: []*command{
			{name: "pause", summary: "stop workers claiming from a queue", args: "QUEUE", flags: queuesPause},
			{name: "resume", summary: "let workers claim from a paused queue again", args: "QUEUE", flags: queuesResume},
			{name: "list", summary: "list the paused queues", flags: queuesList},
		},
	}
}

func queuesPause(fs *flag.FlagSet) action {
	return queuesSet(fs, (*outbox.Client).PauseQueue, "paused queue %s: workers stop claiming from it within one poll interval\n")
}

func queuesResume(fs *flag.FlagSet) action {
	return queuesSet(fs, (*outbox.Client).ResumeQueue, "resumed queue %s\n")
}

// queuesSet is pause and resume: set a queue's state with op, then say so.
func queuesSet(fs *flag.FlagSet, op func(*outbox.Client, context.Context, outbox.Pgx, string) error, done string) action {
	var db dbFlags
	db.register(fs)
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 1, "one queue name"); err != nil {
			return err
		}
		client, pool, err := db.open(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := op(client, ctx, pool, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(out, done, pos[0])
		return nil
	}
}

// pausedQueue is one line of queues list --json.
type pausedQueue struct {
	Queue  string
	Paused bool
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
		paused, err := client.PausedQueues(ctx, pool)
		if err != nil {
			return err
		}
		if *asJSON {
			list := []pausedQueue{}
			for _, q := range paused {
				list = append(list, pausedQueue{q, true})
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
