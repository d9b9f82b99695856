package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
)

var update = flag.Bool("update", false, "rewrite the JSON golden files in testdata")

// normalize replaces what differs between runs in decoded JSON: ids, times,
// the schema name, the Go version. With shape set it keeps only the shape:
// numbers become 0, strings "<string>", and a list its first element.
func normalize(v any, key string, shape bool) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e, k, shape)
		}
		return v
	case []any:
		if shape && len(v) > 1 {
			v = v[:1]
		}
		for i, e := range v {
			v[i] = normalize(e, key, shape)
		}
		return v
	case float64:
		switch {
		case key == "id" || strings.HasSuffix(key, "_id") || key == "next":
			return "<id>"
		case shape:
			return 0
		}
	case string:
		if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return "<time>"
		}
		switch {
		case key == "schema":
			return "<schema>"
		case key == "go_version":
			return "<go version>"
		case shape:
			return "<string>"
		}
	}
	return v
}

// checkGolden runs a --json command, checks the convention (no null, no
// zero time) and compares its normalized output with testdata/NAME.json.
func checkGolden(t *testing.T, name string, shape bool, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := docket(t, args...)
	if code != 0 {
		t.Fatalf("docket %v: %d %s", args, code, errOut)
	}
	if strings.Contains(out, "null") || strings.Contains(out, "0001-01-01") {
		t.Errorf("docket %v prints null or a zero time:\n%s", args, out)
	}
	var v, decoded any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("docket %v: %v\n%s", args, err, out)
	}
	json.Unmarshal([]byte(out), &decoded) // for the caller; normalize changes v
	v = normalize(v, "", shape)
	if m, ok := v.(map[string]any); ok && name == "status" {
		// What holds the vacuum horizon depends on other sessions, and a
		// table's last (auto)vacuum and analyze on autovacuum's timing.
		m["horizon"] = "<varies>"
		for _, table := range m["tables"].([]any) {
			for k := range table.(map[string]any) {
				if strings.HasPrefix(k, "last_") {
					delete(table.(map[string]any), k)
				}
			}
		}
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("docket %v: normalized JSON differs from %s\ngot:\n%s\nwant:\n%s", args, path, got, want)
	}
	m, _ := decoded.(map[string]any)
	return m
}

func TestJSONOutput(t *testing.T) {
	t.Parallel()
	url, schema, dead := opsSetup(t)
	db := []string{"--database-url", url, "--schema", schema}
	with := func(args ...string) []string { return append(args, db...) }

	status := checkGolden(t, "status", true, with("status", "--json")...)
	for _, q := range status["queues"].([]any) {
		q := q.(map[string]any)
		if lag := q["lag"].(float64); q["queue"] == "mail" && (lag < 100 || lag > 3600) {
			t.Errorf("status --json: mail lag %v, want about 120 (seconds)", lag)
		}
	}
	checkGolden(t, "dlq_list", false, with("dlq", "list", "--json", "--kind", "mail", "--limit", "1")...)
	checkGolden(t, "dlq_list_empty", false, with("dlq", "list", "--json", "--kind", "nothing")...)
	checkGolden(t, "dlq_show", false, with("dlq", "show", itoa(dead[0]), "--json")...)
	checkGolden(t, "dlq_show_payload", false, with("dlq", "show", itoa(dead[0]), "--json", "--payload")...)
	checkGolden(t, "jobs_list", false, with("jobs", "list", "--json", "--queue", "mail", "--limit", "2")...)
	checkGolden(t, "jobs_list_dead", false, with("jobs", "list", "--json", "--state", "dead", "--error", "MAILBOX")...)
	checkGolden(t, "jobs_list_empty", false, with("jobs", "list", "--json", "--kind", "nothing")...)
	checkGolden(t, "jobs_show", false, with("jobs", "show", itoa(dead[0]), "--json")...)
	checkGolden(t, "jobs_show_payload", false, with("jobs", "show", itoa(dead[0]), "--json", "--payload")...)
	checkGolden(t, "queues_list_empty", false, with("queues", "list", "--json")...)
	if code, _, errOut := docket(t, with("queues", "pause", "mail")...); code != 0 {
		t.Fatal(errOut)
	}
	checkGolden(t, "queues_list", false, with("queues", "list", "--json")...)
	checkGolden(t, "migrate_list", false, with("migrate", "list", "--json")...)
	checkGolden(t, "migrate_status", false, with("migrate", "status", "--json")...)
	checkGolden(t, "schedules_list_empty", false, with("schedules", "list", "--json")...)
	ob, _ := outbox.New(outbox.Config{Schema: schema})
	svc, err := schedule.New(schedule.Config{DB: pgtest.Pool(t), Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Register(context.Background(), schedule.Schedule{Name: "nightly", Spec: "0 2 * * *", TimeZone: "Europe/Berlin", Args: cliReport{}}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "schedules_list", false, with("schedules", "list", "--json")...)
	checkGolden(t, "version", false, "version", "--json")
}

func TestJSONPendingMigrations(t *testing.T) {
	t.Parallel()
	args := []string{"migrate", "status", "--json", "--database-url", pgtest.URL(t), "--schema", pgtest.Schema(t)}
	code, out, _ := docket(t, args...)
	var s struct{ Pending []map[string]any }
	if code != exitPending || json.Unmarshal([]byte(out), &s) != nil || len(s.Pending) == 0 || s.Pending[0]["name"] != "core" {
		t.Fatalf("migrate status --json before up: %d %s", code, out)
	}
	if _, ok := s.Pending[0]["applied_at"]; ok {
		t.Errorf("a pending migration has applied_at: %s", out)
	}
}

func TestSnakeCase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"OldestDueAt": "oldest_due_at", "DLQSize": "dlq_size", "ClaimP99": "claim_p99",
		"XIDAge": "xid_age", "PID": "pid", "ID": "id", "DLQDelta24h": "dlq_delta24h", "Completed1m": "completed1m"} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}
