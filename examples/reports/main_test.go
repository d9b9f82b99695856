package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/dockettest"
)

func TestMain(m *testing.M) { dockettest.Main(m) }

// TestRun runs the example, shortened, against a test schema.
func TestRun(t *testing.T) {
	db := dockettest.NewDB(t)
	var out strings.Builder
	if err := run(context.Background(), &out, db.URL, db.Schema, 4*time.Second); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`(\d+) runs of 10 schedules; 10 schedules have their next run pending`).FindStringSubmatch(out.String())
	if m == nil || m[1] == "0" {
		t.Fatalf("want runs of all 10 schedules, each with its next run pending; output:\n%s", out.String())
	}
	for _, tenant := range []string{"acme", "cyberdyne"} {
		if !strings.Contains(out.String(), fmt.Sprintf("\n%-10s ", tenant)) {
			t.Errorf("summary lacks tenant %s:\n%s", tenant, out.String())
		}
	}
}
