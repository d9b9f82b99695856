package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/dockettest"
)

func TestMain(m *testing.M) { dockettest.Main(m) }

// TestRun runs the example on two test schemas standing in for two
// databases: each ran the invoices of its own tenants (6 each) and its own
// cleanup schedule.
func TestRun(t *testing.T) {
	eu, us := dockettest.NewDB(t), dockettest.NewDB(t)
	var out strings.Builder
	groups := []Group{
		{Name: "eu", URL: eu.URL, Schema: eu.Schema, Tenants: []string{"acme", "initech", "wonka"}},
		{Name: "us", URL: us.URL, Schema: us.Schema, Tenants: []string{"globex", "hooli", "stark"}},
	}
	if err := run(context.Background(), &out, groups, 2500*time.Millisecond); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, g := range groups {
		m := regexp.MustCompile(g.Name + ` \(` + g.Schema + `\): (\d+) invoices, (\d+) cleanups`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no line for group %s:\n%s", g.Name, out.String())
		}
		if m[1] != "6" {
			t.Errorf("group %s ran %s invoices, want 6:\n%s", g.Name, m[1], out.String())
		}
		if n, _ := strconv.Atoi(m[2]); n < 1 {
			t.Errorf("group %s ran no cleanup:\n%s", g.Name, out.String())
		}
	}
}
