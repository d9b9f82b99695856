// Command docket operates Docket's tables: migrations, the demo, and (as
// they land) status, dead-letter triage, schedules and benchmarks.
//
// Usage:
//
//	docket migrate up|down|list|sql [--database-url URL] [--schema S] [--version N]
//	docket demo [--orders N]
//	docket schedules list [--stale D] | pause NAME | resume NAME | trigger NAME | remove NAME
//	docket bench --scenario insert|drain|sustained|idle|all [--database-url URL] [--jobs N] [--batch B]
//	             [--workers W] [--processes N] [--inserters N] [--producers P] [--producer-tx]
//	             [--rate R] [--duration D] [--history on|off] [--poll-only] [--cpuprofile FILE]
//	docket bench --scenario heldxmin [--rate R] [--baseline D] [--held D] [--recovery D] [--window D]
//	docket status [--json] [--watch D] [--lag D] [--horizon D] [--dead-tuples N] [--claim-p99 D]
//	docket dlq list|show|replay|purge [--kind K] [--queue Q] [--error LIKE] [--since D] [--rate N/s] [--payload]
//	docket jobs cancel|retry ID
//	docket queues pause|resume QUEUE | list
//	docket metrics serve [--addr :9471]
//
// The database URL comes from --database-url, else $DATABASE_URL; bench then
// falls back to a local server found or started, as demo does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// command is one verb of the CLI.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, out, errOut io.Writer) error
}

func commands() []command {
	return []command{
		{"migrate", "apply, revert, list or print schema migrations", runMigrate},
		{"demo", "run jobs end to end against a local PostgreSQL (found or started)", runDemo},
		{"bench", "measure insert, drain and latency; one JSON line per scenario", runBench},
		{"schedules", "list, pause, resume, trigger or remove recurring schedules", runSchedules},
		{"status", "queue health: backlog, lag, throughput, DLQ, vacuum, stuck leases, warnings", runStatus},
		{"dlq", "dead-letter queue: list, show, replay (rate-limited), purge", runDLQ},
		{"jobs", "cancel or retry one job", runJobs},
		{"queues", "pause, resume or list paused queues", runQueues},
		{"metrics", "serve the status as Prometheus metrics", runMetrics},
	}
}

// errUsage marks errors that are the caller's words being off.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(errOut)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], out, errOut)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(errOut, "docket %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(errOut, "docket %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(errOut, "docket: unknown command %q\n", args[0])
	usage(errOut)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: docket <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'docket <command> -h' for a command's flags.")
}

// dbFlags are the connection flags shared by commands.
type dbFlags struct {
	url    string
	schema string
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.url, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL connection URL (default $DATABASE_URL)")
	fs.StringVar(&d.schema, "schema", "public", "schema that holds Docket's tables")
}

func newFlagSet(name string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("docket "+name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	return fs
}

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
