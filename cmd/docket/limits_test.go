package main

import (
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestLimitsCommands(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	db := []string{"--database-url", url, "--schema", schema}
	cmd := func(args ...string) (int, string, string) { return runDocket(t, append(args, db...)...) }
	if code, _, errOut := cmd("migrate", "up"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	if code, out, errOut := cmd("limits", "set", "carriers", "--kind", "carrier_sync", "--per-tenant", "--rate", "50", "--max-running", "5"); code != 0 ||
		!strings.Contains(out, "kind carrier_sync, per tenant: 5 running at once, 50 started per 1s") {
		t.Fatalf("limits set: %d %q %q", code, out, errOut)
	}
	for _, bad := range [][]string{
		{"limits", "set", "other", "--kind", "carrier_sync", "--rate", "5"},            // the kind has a limit
		{"limits", "set", "both", "--kind", "k", "--queue", "q", "--max-running", "1"}, // two scopes
		{"limits", "set", "nothing", "--kind", "k"},                                    // no limit at all
		{"limits", "set", "neg", "--kind", "k", "--max-running", "-1"},
	} {
		if code, _, errOut := cmd(bad...); code == 0 || !strings.Contains(errOut, "invalid limit") {
			t.Errorf("%v: exit %d, %q; want a clear refusal", bad, code, errOut)
		}
	}
	code, out, _ := cmd("limits", "list")
	if code != 0 || !strings.Contains(out, "carriers") || strings.Contains(out, "other") {
		t.Fatalf("limits list: %d %s", code, out)
	}
	if code, out, _ = cmd("limits", "list", "--json"); code != 0 || !strings.Contains(out, `"max_running": 5`) {
		t.Fatalf("limits list --json: %d %s", code, out)
	}
	if code, _, errOut := cmd("limits", "rm", "nope"); code == 0 || !strings.Contains(errOut, `no limit named "nope"`) {
		t.Errorf("rm of a missing limit: %d %s", code, errOut)
	}
	if code, _, _ = cmd("limits", "rm", "carriers"); code != 0 {
		t.Fatal("rm failed")
	}
	if _, out, _ = cmd("limits", "list"); !strings.Contains(out, "no limits") {
		t.Errorf("after rm: %s", out)
	}
}
