package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
)

func runJobs(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlagSet("jobs", errOut)
	var db dbFlags
	db.register(fs)
	note := fs.String("note", "cancelled by operator", "cancel: the error recorded on the cancelled job")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: docket jobs cancel|retry ID [flags]\n\ncancel moves a scheduled or ready job to the dead-letter table (reason cancelled);\nretry runs a dead job again (replayed) or a scheduled one now.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || (pos[0] != "cancel" && pos[0] != "retry") {
		return fmt.Errorf("%w: want cancel ID or retry ID", errUsage)
	}
	id, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil {
		return fmt.Errorf("%w: job id %q is not a number", errUsage, pos[1])
	}
	client, pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	if pos[0] == "cancel" {
		if err := client.CancelJob(ctx, pool, id, *note); err != nil {
			return err
		}
		fmt.Fprintf(out, "job %d cancelled: it is in the dead-letter table\n", id)
		return nil
	}
	if err := client.RetryJob(ctx, pool, id); err != nil {
		return err
	}
	fmt.Fprintf(out, "job %d is ready to run\n", id)
	return nil
}
