package main

import (
	"context"
	"fmt"
	"io"
)

func runQueues(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlagSet("queues", errOut)
	var db dbFlags
	db.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: docket queues pause|resume QUEUE | list [flags]\n\nA paused queue is claimed by no worker process from its next poll on\n(within one poll interval); jobs already running finish.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want pause QUEUE, resume QUEUE or list", errUsage)
	}
	verb := pos[0]
	switch verb {
	case "pause", "resume":
		if len(pos) != 2 {
			return fmt.Errorf("%w: %s takes one queue name", errUsage, verb)
		}
	case "list":
	default:
		return fmt.Errorf("%w: unknown queues verb %q: want pause, resume or list", errUsage, verb)
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch verb {
	case "pause":
		if err := client.PauseQueue(ctx, pool, pos[1]); err != nil {
			return err
		}
		fmt.Fprintf(out, "paused queue %s: workers stop claiming from it within one poll interval\n", pos[1])
	case "resume":
		if err := client.ResumeQueue(ctx, pool, pos[1]); err != nil {
			return err
		}
		fmt.Fprintf(out, "resumed queue %s\n", pos[1])
	case "list":
		paused, err := client.PausedQueues(ctx, pool)
		if err != nil {
			return err
		}
		if len(paused) == 0 {
			fmt.Fprintln(out, "no paused queues")
		}
		for _, q := range paused {
			fmt.Fprintf(out, "%s\tpaused\n", q)
		}
	}
	return nil
}
