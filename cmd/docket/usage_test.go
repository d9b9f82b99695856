package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/outbox/relay"
)

// connRecorder is a loopback listener that counts the connections made to
// it and closes each at once: given as the database (and broker) address,
// it tells whether a command tried to connect, whatever it then did.
type connRecorder struct {
	addr     string
	accepted atomic.Int64
}

func recordConnections(t *testing.T) *connRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &connRecorder{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.accepted.Add(1) // before the close the client waits for
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

// databaseURL is a PostgreSQL URL of the recorder, with a password that
// must never be printed.
func (r *connRecorder) databaseURL() string {
	return "postgres://nobody:secret@" + r.addr + "/x?connect_timeout=2&sslmode=disable"
}

// Stand-ins in a command line for the recorder's URLs, replaced when it runs.
const (
	databaseURLMark = "<database-url>"
	natsURLMark     = "<nats-url>"
)

// leafArgs are arguments with which a leaf passes every check of its own,
// so that it goes on to connect (or, for the few that connect to nothing,
// to do its work): the base that each misuse case changes in one place.
// Every leaf of the command table needs an entry.
type leafArgs struct{ pos, flags []string }

var validArgs = map[string]leafArgs{
	"migrate up":        {},
	"migrate down":      {},
	"migrate list":      {},
	"migrate sql":       {},
	"migrate status":    {},
	"migrate grant":     {flags: []string{"--role", "app"}},
	"status":            {},
	"dlq list":          {},
	"dlq show":          {pos: []string{"7"}},
	"dlq replay":        {pos: []string{"7"}},
	"dlq purge":         {flags: []string{"--older-than", "720h"}},
	"jobs list":         {},
	"jobs show":         {pos: []string{"7"}},
	"jobs cancel":       {pos: []string{"7"}},
	"jobs retry":        {pos: []string{"7"}},
	"queues pause":      {pos: []string{"mail"}},
	"queues resume":     {pos: []string{"mail"}},
	"queues list":       {},
	"schedules list":    {},
	"schedules pause":   {pos: []string{"nightly"}},
	"schedules resume":  {pos: []string{"nightly"}},
	"schedules trigger": {pos: []string{"nightly"}},
	"schedules remove":  {pos: []string{"nightly"}},
	"workflows list":    {},
	"workflows show":    {pos: []string{"7"}},
	"workflows cancel":  {pos: []string{"7"}},
	"workflows signal":  {pos: []string{"7", "paid"}},
	"limits set":        {pos: []string{"mail"}, flags: []string{"--max-running", "5"}},
	"limits list":       {},
	"limits rm":         {pos: []string{"mail"}},
	"relay run":         {},
	"relay status":      {},
	"relay dlq list":    {},
	"relay dlq replay":  {pos: []string{"7"}},
	"relay dlq purge":   {pos: []string{"7"}},
	"dashboard":         {flags: []string{"--addr", "127.0.0.1:0"}},
	"metrics serve":     {flags: []string{"--addr", "127.0.0.1:0"}},
	"demo":              {flags: []string{"--orders", "1"}},
	"bench":             {flags: []string{"--scenario", "insert", "--jobs", "10"}},
	"version":           {},
}

// malformedText are wrong values of the text flags: by name, or by leaf
// and name where one name means different things. Numbers, durations and
// booleans get theirs from their type.
var malformedText = map[string][]string{
	"database-url":       {"::not a url"},
	"listen-url":         {"::not a url"},
	"schema":             {"Bad-Name"},
	"addr":               {"nope"},
	"metrics-addr":       {"nope"},
	"nats-url":           {"nats://host:port"},
	"amqp-url":           {"http://rabbit:5672"},
	"kafka-brokers":      {"nohost"},
	"exchange":           {"events"}, // without --amqp-url
	"subject":            {"orders"}, // not TOPIC=SUBJECT
	"state":              {"finished"},
	"direction":          {"sideways"},
	"rate":               {"fast", "0/s", "5/h"},
	"since":              {"yesterday"},
	"scenario":           {"nope"},
	"history":            {"maybe"},
	"limit-variants":     {"fast", "rate,"},
	"relays":             {"0", "one", "1,,3", "65"},
	"databases":          {"0", "1,x"},
	"role":               {strings.Repeat("r", 64)}, // PostgreSQL names are at most 63 bytes
	"limits set --queue": {"bad name"},
	"limits set --kind":  {"bad name"},
	"id":                 {"relay\x01one", strings.Repeat("r", relay.MaxIDLen+1)}, // a control character; too long
	"allowed-hosts":      {"dash.internal:8443"},                                  // a host, not host:port
	"payload":            {"{bad", "not json"},
}

// freeText are text flags any value of which is well-formed: filters,
// notes, tokens and file names.
var freeText = map[string]bool{"kind": true, "queue": true, "tenant": true, "serial-key": true, "error": true,
	"note": true, "topic": true, "token": true, "out": true, "cpuprofile": true,
	"bench --nats-url":     true, // read by the relay scenario only, when it dials
	"bench --relay-bin":    true, // a file name, run by the relay scenario only
	"bench --serve-worker": true, // internal: bench starts its own workers with it
}

// misuse is a command line that must be refused as a usage error.
type misuse struct {
	args []string
	want string // in the message; "" for generated cases
}

// misuses derives, from the command table, the usage errors of one leaf:
// an unknown flag; its arguments missing, one too many and malformed (by
// the names on its usage line); and each flag with malformed values.
func misuses(t *testing.T, l leaf, base []string) []misuse {
	t.Helper()
	path := strings.Fields(l.path)
	valid, ok := validArgs[l.path]
	if !ok {
		t.Errorf("leaf %q has no validArgs entry: give arguments it accepts", l.path)
		return nil
	}
	line := func(pos []string, flags ...string) []string {
		return slices.Concat(path, base, valid.flags, flags, pos)
	}
	out := []misuse{{args: line(valid.pos, "--no-such-flag")}}

	// The usage line names what the leaf needs: ID, NAME, QUEUE, [ID...]
	// and required flags (--scenario ...). Without them it is misuse.
	need := strings.Fields(l.cmd.args)
	if len(need) > 0 {
		var flags []string // valid.flags less the required ones
		for i := 0; i < len(valid.flags); i++ {
			if slices.Contains(need, valid.flags[i]) {
				i++ // and its value
				continue
			}
			flags = append(flags, valid.flags[i])
		}
		out = append(out, misuse{args: slices.Concat(path, base, flags)})
	}
	switch args := strings.Join(need, " "); {
	case args == "" || strings.HasPrefix(args, "--"):
		out = append(out, misuse{args: line(append(slices.Clone(valid.pos), "extra"))})
	case args == "ID" || args == "[ID...]":
		for _, bad := range []string{"x", "0", "1.5", "99999999999999999999"} {
			out = append(out, misuse{args: line([]string{bad})})
		}
		if args == "ID" {
			out = append(out, misuse{args: line([]string{"7", "8"})})
		}
	case args == "ID NAME":
		for _, bad := range []string{"x", "0", "1.5"} {
			out = append(out, misuse{args: line([]string{bad, "paid"})})
		}
		out = append(out, misuse{args: line([]string{"7", "paid", "extra"})})
	case args == "NAME" || args == "QUEUE":
		// A name is looked up: one nobody could have made is unknown (exit 1).
		out = append(out, misuse{args: line([]string{"a", "b"})})
	default:
		t.Errorf("%s: usage line names %q: say here what its misuse is", l.path, args)
	}

	fs := newFlagSet(l.path)
	l.cmd.flags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		var bad []string
		var typ any = f.Value
		if g, ok := f.Value.(flag.Getter); ok {
			typ = g.Get()
		}
		switch typ.(type) {
		case bool:
			bad = []string{"x"}
		case int, int64:
			bad = []string{"x", "-7", "99999999999999999999"}
		case float64:
			bad = []string{"x", "-7"}
		case time.Duration:
			bad = []string{"x", "-7s", "5"}
		default:
			own := l.path + " --" + f.Name
			var listed bool
			if bad, listed = malformedText[own]; !listed && !freeText[own] {
				bad, listed = malformedText[f.Name]
				if !listed && !freeText[f.Name] {
					t.Errorf("%s: list its malformed values in malformedText, or mark it freeText", own)
				}
			}
		}
		for _, v := range bad {
			out = append(out, misuse{args: line(valid.pos, "--"+f.Name+"="+v)})
		}
	})
	return out
}

// TestUsageErrorsBeforeConnecting runs every misuse of every command
// (listed below, and derived from the command table) with the database,
// the LISTEN URL and the broker pointing at a listener that records
// connections: each must exit 2 with its message and a pointer to --help,
// print nothing on stdout and connect to nothing. The leaves' valid
// arguments, run the same way, do connect: the check can see it.
func TestUsageErrorsBeforeConnecting(t *testing.T) {
	t.Setenv("DOCKET_PG", "auto") // discovery takes DATABASE_URL as it is
	t.Setenv("DOCKET_SCHEMA", "")
	t.Setenv("DOCKET_PGBOUNCER", "")
	t.Setenv("DOCKET_DASHBOARD_TOKEN", "")

	// Each command line gets a listener of its own, so that a connection
	// that arrives late is still put down to the command that made it.
	var recs []*connRecorder
	try := func(args []string) (code int, out, errOut string, rec *connRecorder) {
		t.Helper()
		rec = recordConnections(t)
		recs = append(recs, rec)
		dbURL := rec.databaseURL()
		t.Setenv("DATABASE_URL", dbURL)
		t.Setenv("DOCKET_LISTEN_URL", dbURL)
		for i, a := range args {
			switch a {
			case databaseURLMark:
				args[i] = dbURL
			case natsURLMark:
				args[i] = "nats://" + rec.addr
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var o, e bytes.Buffer
		code = run(ctx, args, &o, &e)
		return code, o.String(), e.String(), rec
	}

	cases := []misuse{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"migrate", "sideways"}, `unknown migrate verb "sideways"`},
		{[]string{"migrate", "sideways", "--database-url", "postgres://x"}, `unknown migrate verb "sideways"`},
		{[]string{"dlq", "--json", "list"}, "flag --json before the verb: want one of list"},
		{[]string{"dlq", "list", "--payload"}, "flag provided but not defined: -payload"},
		{[]string{"dlq", "list", "--older-than", "1h"}, "not defined: -older-than"},
		{[]string{"dlq", "list", "--rate", "5/s"}, "not defined: -rate"},
		{[]string{"dlq", "list", "7"}, "list takes no ids"},
		{[]string{"dlq", "list", "--limit", "0"}, "--limit 0: want -1 (no limit) or 1 or more"},
		{[]string{"dlq", "show", "7", "--rate", "5/s"}, "not defined: -rate"},
		{[]string{"dlq", "show"}, "takes one job id"},
		{[]string{"dlq", "show", "x"}, `job id "x" is not a positive integer`},
		{[]string{"dlq", "show", "0"}, `job id "0" is not a positive integer`},
		{[]string{"dlq", "replay"}, "needs ids"},
		{[]string{"dlq", "replay", "--all", "--rate", "fast"}, `rate "fast"`},
		{[]string{"dlq", "replay", "--payload", "--all"}, "not defined: -payload"},
		{[]string{"dlq", "purge"}, "needs --older-than"},
		{[]string{"dlq", "purge", "--older-than", "1h", "--kind", "mail"}, "not defined: -kind"},
		{[]string{"jobs", "retry", "1", "--note", "x"}, "not defined: -note"},
		{[]string{"jobs", "cancel"}, "takes one job id"},
		{[]string{"jobs", "list", "--state", "finished"}, `unknown state "finished"`},
		{[]string{"jobs", "list", "--limit", "5000"}, "page size 5000: want 1 to 1000"},
		{[]string{"jobs", "list", "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{[]string{"jobs", "list", "--after", "x"}, `invalid value "x" for flag -after`},
		{[]string{"jobs", "list", "--after", "-3"}, "after -3: want a job id"},
		{[]string{"jobs", "list", "--state", "completed", "--error", "x"}, "completed jobs keep no error"},
		{[]string{"jobs", "list", "7"}, "list takes no ids"},
		{[]string{"jobs", "show"}, "takes one job id"},
		{[]string{"jobs", "show", "x"}, `job id "x" is not a positive integer`},
		{[]string{"queues", "list", "--stale", "1h"}, "not defined: -stale"},
		{[]string{"queues", "pause"}, "takes one queue name"},
		{[]string{"queues", "resume", "mail", "--create"}, "not defined: -create"},
		{[]string{"schedules", "pause", "nightly", "--stale", "1h"}, "not defined: -stale"},
		{[]string{"schedules", "list", "--stale", "-1h"}, "--stale -1h0m0s: want a positive duration"},
		{[]string{"workflows", "show", "0"}, `workflow id "0" is not a positive integer`},
		{[]string{"limits", "set", "nothing", "--kind", "k"}, "want MaxRunning or Rate"},
		{[]string{"limits", "set", "neg", "--kind", "k", "--max-running", "-1"}, "negative"},
		{[]string{"limits", "set", "both", "--kind", "k", "--queue", "q", "--max-running", "1"}, "a queue or a kind, not both"},
		{[]string{"limits", "set", "per", "--max-running", "1", "--per", "5s"}, "Per and Burst need a Rate"},
		{[]string{"status", "--addr", ":1"}, "not defined: -addr"},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"status", "--watch", "-2s"}, "--watch -2s: want 0 (once) or a positive interval"},
		{[]string{"status", "--lag", "-1m"}, "--lag -1m0s: want a positive threshold"},
		{[]string{"metrics", "serve", "--watch", "1s"}, "not defined: -watch"},
		{[]string{"metrics", "serve", "--addr", "nope"}, `--addr "nope"`},
		{[]string{"migrate", "up", "--direction", "up"}, "not defined: -direction"},
		{[]string{"migrate", "up", "--version", "999"}, "--version 999: known versions are 1 to"},
		{[]string{"migrate", "down", "--version", "-2"}, "--version -2: known versions are 1 to"},
		{[]string{"migrate", "sql", "--version", "999"}, "--version 999: known versions are 1 to"},
		{[]string{"migrate", "sql", "--database-url", "postgres://x"}, "not defined: -database-url"},
		{[]string{"migrate", "sql", "--direction", "sideways"}, `--direction "sideways"`},
		{[]string{"migrate", "status", "--version", "3"}, "not defined: -version"},
		{[]string{"migrate", "up", "--schema", "Bad-Name"}, "invalid schema name"},
		{[]string{"migrate", "up", "--database-url", "::not a url"}, "invalid database URL"},
		{[]string{"relay", "run", "--nats-url", "nats://host:port"}, `--nats-url`},
		{[]string{"relay", "run", "--amqp-url", "http://rabbit"}, `--amqp-url`},
		{[]string{"relay", "run", "--listen-url", "::not a url"}, "--listen-url: invalid"},
		{[]string{"relay", "run", "--metrics-addr", "nope"}, `--metrics-addr "nope"`},
		{[]string{"relay", "run", "--batch", "-1"}, "--batch -1: want 0 (the default, 500) or more"},
		{[]string{"version", "--schema", "x"}, "not defined: -schema"},
		{[]string{"demo", "--orders", "0"}, "--orders must be at least 1"},
		{[]string{"bench", "--scenario", "all", "--rate", "-1"}, "--rate must be positive"},
	}
	leaves := 0
	for _, l := range walk(commands(), "") {
		path := strings.Fields(l.path)
		if l.cmd.verbs != nil && len(path) > 0 {
			cases = append(cases, misuse{path, "want "})
			cases = append(cases, misuse{append(path, "nope"), `verb "nope"`})
		}
		if l.cmd.flags == nil {
			continue
		}
		leaves++
		// The database and broker given as flags too, where the leaf has
		// them: a misuse case that sets one again comes later and wins.
		var base []string
		for _, name := range flagNames(l.cmd) {
			switch name {
			case "database-url":
				base = append(base, "--database-url", databaseURLMark)
			case "nats-url":
				base = append(base, "--nats-url", natsURLMark)
			}
		}
		cases = append(cases, misuses(t, l, base)...)

		args := slices.Concat(path, base, validArgs[l.path].flags, validArgs[l.path].pos)
		code, _, errOut, rec := try(args)
		if code == exitUsage {
			t.Errorf("docket %v (valid arguments): exit 2: %s", args, errOut)
		}
		if slices.Contains(flagNames(l.cmd), "database-url") && rec.accepted.Load() == 0 {
			t.Errorf("docket %v (valid arguments): exit %d without trying the database: %s", args, code, errOut)
		}
	}
	if len(validArgs) != leaves {
		t.Errorf("validArgs has %d entries for %d leaves: remove those of leaves that are gone", len(validArgs), leaves)
	}

	type result struct {
		misuse
		code        int
		out, errOut string
		rec         *connRecorder
	}
	var results []result
	for _, c := range cases {
		code, out, errOut, rec := try(slices.Clone(c.args))
		results = append(results, result{c, code, out, errOut, rec})
	}
	// A connection attempt may still be on its way when the command has
	// given up on it: let the last ones land before counting.
	time.Sleep(200 * time.Millisecond)
	for _, r := range results {
		path := "docket"
		if i := strings.Index(r.errOut, ": "); i > 0 {
			path = r.errOut[:i]
		}
		if conns := r.rec.accepted.Load(); r.code != exitUsage || r.out != "" || conns != 0 || !strings.Contains(r.errOut, r.want) ||
			!strings.Contains(r.errOut, fmt.Sprintf("Run '%s --help' for usage.", path)) || strings.Contains(r.errOut, "secret") {
			t.Errorf("docket %q: exit %d, %d connections, stdout %q, stderr %q; want exit 2, none, a usage message with %q",
				r.args, r.code, conns, r.out, r.errOut, r.want)
		}
	}
	t.Logf("%d misuses of %d leaves", len(cases), leaves)
}
