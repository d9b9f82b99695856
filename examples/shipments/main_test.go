package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/docketq/docket/dockettest"
)

func TestMain(m *testing.M) { dockettest.Main(m) }

// TestRun runs the example against a test schema. run checks its own
// results (every shipment tracked and notified once, nothing left over,
// carrier caps kept) and returns an error otherwise.
func TestRun(t *testing.T) {
	db := dockettest.NewDB(t)
	var out strings.Builder
	if err := run(context.Background(), &out, io.Discard, db.URL, db.Schema, 12); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Shipments example summary (schema " + db.Schema + ")",
		"shipments created              12",
		"tracking jobs done             12",
		"notifications done (hook)      12",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
