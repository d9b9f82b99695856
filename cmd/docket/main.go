// Command docket operates Docket's tables: migrations, status, dead-letter
// triage, jobs, queues, schedules, workflows, metrics, the demo and benchmarks.
//
// Usage:
//
//	docket <command> [<verb>] [flags] [arguments]
//	docket --help | docket <command> --help | docket <command> <verb> --help
//	docket version | docket --version
//
// Every command, verb and flag is defined once, in the command table
// (commands in this file, one constructor per file); help text, usage errors
// and the tests derive from it. A flag that does not belong to the verb, an
// unknown verb, a missing argument and a malformed one (an id, number,
// duration, address, URL or limit no command could use) are usage errors,
// reported before any connection is made.
//
// Help goes to stdout, errors to stderr. Exit codes: 0 success, 1 failure,
// 2 usage error, 3 migrate status found pending migrations.
//
// The database URL comes from --database-url, else $DATABASE_URL; the schema
// from --schema, else $DOCKET_SCHEMA, else public. demo and bench fall back
// to a local server found or started.
//
// With --json a command prints one JSON document (status --watch: one per
// line) in one convention: snake_case keys, RFC 3339 UTC times, durations in
// seconds, [] for an empty list, and absent values (a zero time, a missing
// payload) left out. Each object has one shape, one struct in jsonout.go,
// whichever command prints it (docs/cli-json.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/docketq/docket/internal/engine/pgsql"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// command is one entry of the command table: a group of verbs, or a leaf
// that runs.
type command struct {
	name    string
	summary string // one line, shown in the parent's list
	args    string // a leaf's positional arguments, for its usage line
	about   string // more help text; optional
	// flags registers a leaf's flags on fs and returns what runs it. It is
	// called for every parse and every help text, so each flag is defined
	// once, in the leaf that uses it.
	flags func(fs *flag.FlagSet) action
	verbs []*command // a group's verbs
}

// action runs a leaf with its positional arguments once its flags parsed.
type action func(ctx context.Context, pos []string, out, errOut io.Writer) error

// commands is the command table.
func commands() *command {
	return &command{
		name: "docket",
		about: `Environment:
  DATABASE_URL      PostgreSQL connection URL when --database-url is not given
  DOCKET_SCHEMA     schema of Docket's tables when --schema is not given (default public)
  DOCKET_PGBOUNCER  1: the URL goes through PgBouncer in transaction mode (as --pgbouncer)
  DOCKET_LISTEN_URL PostgreSQL URL for LISTEN past a transaction pooler (relay run --listen-url)

Exit codes: 0 success, 1 failure, 2 usage error, 3 migrations pending (migrate status).`,
		verbs: []*command{
			migrateCommand(),
			statusCommand(),
			dlqCommand(),
			jobsCommand(),
			queuesCommand(),
			schedulesCommand(),
			workflowsCommand(),
			limitsCommand(),
			relayCommand(),
			dashboardCommand(),
			metricsCommand(),
			demoCommand(),
			benchCommand(),
			versionCommand(),
		},
	}
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errUsage marks errors that are the caller's words being off.
var errUsage = errors.New("usage")

// exitError is a failure with its own exit code, for a verb whose result a
// script branches on (migrate status: 3 when migrations are pending).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	inv, code := resolve(args, out, errOut)
	if inv == nil {
		return code
	}
	err := inv.act(ctx, inv.pos, out, errOut)
	var exit *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return usageError(errOut, inv.path, err)
	case errors.As(err, &exit):
		fmt.Fprintf(errOut, "%s: %v\n", inv.path, err)
		return exit.code
	}
	fmt.Fprintf(errOut, "%s: %v\n", inv.path, pgsql.WrapPooler(err))
	return exitFailure
}

// invocation is a command line resolved to a leaf whose flags parsed.
type invocation struct {
	path string   // "docket dlq list"
	act  action   // what runs the leaf
	pos  []string // its positional arguments
}

// resolve walks args down the command table and parses the leaf's flags,
// connecting to nothing. It returns nil and the exit code when the command
// line is answered without running anything: help, or a usage error.
func resolve(args []string, out, errOut io.Writer) (*invocation, int) {
	cmd, path := commands(), "docket"
	if len(args) > 0 && args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) > 0 && args[0] == "help" {
		return nil, help(args[1:], out, errOut)
	}
	for cmd.verbs != nil {
		if len(args) == 0 {
			if path == "docket" {
				printHelp(errOut, cmd, path)
				return nil, exitUsage
			}
			return nil, usageError(errOut, path, fmt.Errorf("want %s", cmd.verbList()))
		}
		if isHelpFlag(args[0]) {
			printHelp(out, cmd, path)
			return nil, exitOK
		}
		next := cmd.verb(args[0])
		if next == nil {
			what := "unknown " + strings.TrimPrefix(path+" verb", "docket ")
			if path == "docket" {
				what = "unknown command"
			}
			if strings.HasPrefix(args[0], "-") {
				return nil, usageError(errOut, path, fmt.Errorf("flag %s before the verb: want %s, then flags", args[0], cmd.verbList()))
			}
			return nil, usageError(errOut, path, fmt.Errorf("%s %q: want %s", what, args[0], cmd.verbList()))
		}
		cmd, path, args = next, path+" "+next.name, args[1:]
	}
	fs := newFlagSet(path)
	act := cmd.flags(fs)
	pos, err := parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(out, cmd, path)
		return nil, exitOK
	case err != nil:
		return nil, usageError(errOut, path, err)
	}
	return &invocation{path: path, act: act, pos: pos}, exitOK
}

// help is `docket help [command [verb]]`.
func help(args []string, out, errOut io.Writer) int {
	cmd, path := commands(), "docket"
	for _, a := range args {
		next := cmd.verb(a)
		if next == nil {
			return usageError(errOut, "docket help", fmt.Errorf("no help for %q: want %s", strings.Join(args, " "), cmd.verbList()))
		}
		cmd, path = next, path+" "+next.name
	}
	printHelp(out, cmd, path)
	return exitOK
}

func usageError(errOut io.Writer, path string, err error) int {
	msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
	fmt.Fprintf(errOut, "%s: %s\nRun '%s --help' for usage.\n", path, msg, path)
	return exitUsage
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

func (c *command) verb(name string) *command {
	for _, v := range c.verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

// verbList names a group's verbs for an error: "serve", "list or show",
// "one of up, down, list, sql, status".
func (c *command) verbList() string {
	names := make([]string, len(c.verbs))
	for i, v := range c.verbs {
		names[i] = v.name
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// printHelp writes a command's help: usage line, description, and its verbs
// or its flags.
func printHelp(w io.Writer, c *command, path string) {
	if c.verbs != nil {
		what := "<verb>"
		if path == "docket" {
			what = "<command>"
		}
		fmt.Fprintf(w, "usage: %s %s [flags]\n\n", path, what)
		if c.summary != "" {
			fmt.Fprintf(w, "%s.\n\n", upperFirst(c.summary))
		}
		fmt.Fprintf(w, "%ss:\n", strings.Trim(what, "<>"))
		for _, v := range c.verbs {
			fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
		}
		if c.about != "" {
			fmt.Fprintf(w, "\n%s\n", c.about)
		}
		fmt.Fprintf(w, "\nRun '%s %s --help' for its flags.\n", path, what)
		return
	}
	line := path + " [flags]"
	if c.args != "" {
		line += " " + c.args
	}
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", line, upperFirst(c.summary))
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	fs := newFlagSet(path)
	c.flags(fs)
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// newFlagSet returns a flag set that reports nothing itself: run prints
// parse errors and help where they belong.
func newFlagSet(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
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

// wantArgs checks a leaf's count of positional arguments.
func wantArgs(pos []string, n int, what string) error {
	switch {
	case len(pos) == n:
		return nil
	case n == 0:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	return fmt.Errorf("%w: takes %s", errUsage, what)
}

// positiveID reads an id argument (jobs, workflows and events count from 1).
func positiveID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("%w: %s id %q is not a positive integer", errUsage, what, s)
	}
	return id, nil
}

// checkAddr checks a listen address flag (host:port, host may be empty)
// before anything is dialled or bound.
func checkAddr(name, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%w: %s %q: want host:port (%v)", errUsage, name, addr, err)
	}
	return nil
}

// dbFlags are the connection flags shared by commands.
type dbFlags struct {
	url       string
	schema    string
	pgbouncer bool
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	// The default is read when connecting, not shown in help: it may hold a password.
	fs.StringVar(&d.url, "database-url", "", "PostgreSQL connection URL (default $DATABASE_URL)")
	fs.BoolVar(&d.pgbouncer, "pgbouncer", envBool("DOCKET_PGBOUNCER"),
		"the URL goes through PgBouncer in transaction mode: use a query mode it serves, and no LISTEN; $DOCKET_PGBOUNCER=1 sets the default")
	d.registerSchema(fs)
}

// envBool reports whether the environment variable name is 1 or true.
func envBool(name string) bool {
	v := os.Getenv(name)
	return v == "1" || strings.EqualFold(v, "true")
}

// registerSchema registers --schema alone, for verbs that print SQL
// without connecting.
func (d *dbFlags) registerSchema(fs *flag.FlagSet) {
	schema := os.Getenv("DOCKET_SCHEMA")
	if schema == "" {
		schema = pgsql.DefaultSchema
	}
	fs.StringVar(&d.schema, "schema", schema, "schema that holds Docket's tables; $DOCKET_SCHEMA sets the default")
}
