package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// FuzzCommandLine resolves arbitrary command lines (arguments separated by
// NUL, which no real argument holds) without running them. Resolution
// never panics; it either answers with help (exit 0, stdout only) or a
// usage error (exit 2, stderr only), or yields a leaf of the table with
// nothing printed and positional arguments taken from the command line. A
// first word that names no command is always a usage error.
func FuzzCommandLine(f *testing.F) {
	for _, l := range walk(commands(), "") {
		f.Add(strings.ReplaceAll(l.path, " ", "\x00"))
		if l.cmd.verbs == nil {
			for _, name := range flagNames(l.cmd) {
				f.Add(strings.ReplaceAll(l.path, " ", "\x00") + "\x00--" + name + "\x00")
				f.Add(strings.ReplaceAll(l.path, " ", "\x00") + "\x00-" + name + "=x\x00extra")
			}
		}
	}
	for _, s := range []string{"", "--version", "help\x00dlq\x00list", "help\x00nope", "-h", "--schema\x00x\x00status",
		"dlq\x00list\x00--limit\x00-1", "dlq\x00list\x00--limit\x009999999999999999999999", "jobs\x00list\x00--\x00--help",
		"status\x00--watch=-1s", "bench\x00--scenario\x00nope", "\xff", "status\x00-", "status\x00---json"} {
		f.Add(s)
	}
	known := map[string]bool{"help": true, "--version": true, "-h": true, "-help": true, "--help": true}
	for _, v := range commands().verbs {
		known[v.name] = true
	}
	f.Fuzz(func(t *testing.T, line string) {
		var args []string
		if line != "" {
			args = strings.Split(line, "\x00")
		}
		var out, errOut bytes.Buffer
		inv, code := resolve(args, &out, &errOut)
		if inv != nil {
			if out.Len() > 0 || errOut.Len() > 0 {
				t.Fatalf("%q resolved to %s but printed %q / %q", args, inv.path, out.String(), errOut.String())
			}
			if inv.act == nil || !strings.HasPrefix(inv.path, "docket ") {
				t.Fatalf("%q resolved to %q without an action", args, inv.path)
			}
			for _, p := range inv.pos {
				if !slices.Contains(args, p) {
					t.Fatalf("%q: positional argument %q is not on the command line", args, p)
				}
			}
			if len(args) == 0 || !known[args[0]] {
				t.Fatalf("%q resolved to %s from an unknown first word", args, inv.path)
			}
			return
		}
		switch code {
		case exitOK:
			if out.Len() == 0 || errOut.Len() > 0 {
				t.Fatalf("%q: exit 0 with stdout %q, stderr %q; want help on stdout only", args, out.String(), errOut.String())
			}
		case exitUsage:
			if errOut.Len() == 0 || out.Len() > 0 {
				t.Fatalf("%q: exit 2 with stdout %q, stderr %q; want the error on stderr only", args, out.String(), errOut.String())
			}
		default:
			t.Fatalf("%q: exit %d before running anything", args, code)
		}
		if len(args) > 0 && !known[args[0]] && code != exitUsage {
			t.Fatalf("%q: unknown first word answered with exit %d, want %d", args, code, exitUsage)
		}
	})
}
