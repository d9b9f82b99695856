package main

import (
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
	"github.com/google/uuid"
)

var update = flag.Bool("update", false, "rewrite the JSON golden files in testdata")

// normalize replaces what differs between runs in decoded JSON: ids, times,
// the schema name, worker ids, the Go version. With shape set it keeps only the shape:
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
		case key == "locked_by", key == "worker":
			return "<worker id>"
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
func checkGolden(t *testing.T, name string, shape bool, args ...string) any {
	t.Helper()
	code, out, errOut := runDocket(t, args...)
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
	return decoded
}

// jsonSetup is opsSetup and one of each other object --json prints: a
// live worker, a stuck job, a workflow, a limit with a key in use, a
// schedule and a dead event.
func jsonSetup(t *testing.T) (url, schema string, dead []int64, running, workflow int64) {
	t.Helper()
	ctx := context.Background()
	url, schema, dead = opsSetup(t)
	pool := pgtest.Pool(t)
	c := enqueueClient(t, pool, schema)
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	worker := uuid.New()
	if err := q.RegisterWorker(ctx, pool, queue.WorkerInfo{ID: worker, Host: "worker-1", PID: 4242,
		Kinds: []string{"mail"}, Queues: []string{"mail"}, Slots: 8, TTL: time.Hour,
		Claims: 10, ClaimP50: time.Millisecond, ClaimP95: 2 * time.Millisecond, ClaimP99: 3 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, pool, mailArgs{To: "secret@example.com"}, docket.Opts{Queue: "stuck"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: worker, Queues: []string{"stuck"}, Kinds: []string{"mail"},
		Limit: 1, Lease: time.Millisecond})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	// The running job reported progress, and an operator asked to cancel it.
	if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".docket_jobs SET progress = '{"done": 3, "of": 10}',
		progress_message = 'copying rows', progress_at = now() WHERE id = $1`, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if running, err := c.Admin().Jobs().Cancel(ctx, pool, jobs[0].ID, "not needed"); err != nil || !running {
		t.Fatalf("cancel the running job: %v %v", running, err)
	}
	wf, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "nightly-report", Jobs: []docket.WorkflowJob{
		{Ref: "extract", Args: mailArgs{To: "secret@example.com"}},
		{Ref: "send", Args: mailArgs{To: "secret@example.com"}, After: docket.After("extract"),
			WaitFor: "approved", WaitTimeout: time.Hour},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A child workflow of the first job, as EnqueueChildWorkflow writes it
	// from that job's handler (no handler runs here).
	child, err := c.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "nightly-report part", Jobs: []docket.WorkflowJob{
		{Ref: "part", Args: mailArgs{To: "secret@example.com"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".docket_workflows SET parent_job_id = $2, parent_workflow_id = $3, depth = 1
		WHERE id = $1`, child.ID, wf.Jobs["extract"], wf.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Admin().Limits().Set(ctx, pool, admin.Limit{Name: "stuck-cap", Queue: "stuck", MaxRunning: 5}); err != nil {
		t.Fatal(err)
	}
	p, err := c.Outbox().Publish(ctx, pool, outbox.Message{Topic: "orders", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE "`+schema+`".docket_events SET dead_at = now(), blocks_key = true,
		attempts = 3, last_error = 'message too large' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	// The stuck job's lease (1ms) ends by the database's clock.
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n == 0; {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".docket_stuck_jobs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatal("the job claimed with a 1ms lease is not stuck after 10s")
		}
	}
	return url, schema, dead, jobs[0].ID, wf.ID
}

// objectAt says where a command's --json output holds which object of
// jsonObjects. path is "" for the document, "[]" for its elements, "k" for
// its key k, "k[]" for the elements of k, and may chain ("[].keys[]").
// detail is the struct printed where the command adds keys to the object;
// it embeds the object's struct.
type objectAt struct {
	path   string
	object string
	detail reflect.Type
}

// jsonObjects are the objects of docs/cli-json.md, by name.
var jsonObjects = map[string]reflect.Type{
	"job":            reflect.TypeFor[jobJSON](),
	"job page":       reflect.TypeFor[jobPageJSON](),
	"attempt":        reflect.TypeFor[attemptJSON](),
	"queue":          reflect.TypeFor[queueJSON](),
	"queue status":   reflect.TypeFor[queueStatusJSON](),
	"worker":         reflect.TypeFor[workerJSON](),
	"table":          reflect.TypeFor[tableJSON](),
	"stuck job":      reflect.TypeFor[stuckJobJSON](),
	"unserved kind":  reflect.TypeFor[unservedJSON](),
	"horizon holder": reflect.TypeFor[horizonJSON](),
	"warning":        reflect.TypeFor[warningJSON](),
	"event status":   reflect.TypeFor[eventStatusJSON](),
	"status":         reflect.TypeFor[statusJSON](),
	"schedule":       reflect.TypeFor[scheduleJSON](),
	"workflow":       reflect.TypeFor[workflowJSON](),
	"workflow job":   reflect.TypeFor[workflowJobJSON](),
	"limit":          reflect.TypeFor[limitJSON](),
	"limit key":      reflect.TypeFor[limitKeyJSON](),
	"migration":      reflect.TypeFor[migrationJSON](),
	"migrate status": reflect.TypeFor[migrateStatusJSON](),
	"dead event":     reflect.TypeFor[deadEventJSON](),
	"version":        reflect.TypeFor[buildVersion](),
}

// jsonKeys returns the keys of a struct writeJSON prints: required ones,
// and the optional ones (tagged omitzero or omitempty) left out when
// absent.
func jsonKeys(t reflect.Type) (required, optional map[string]bool) {
	required, optional = map[string]bool{}, map[string]bool{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			r, o := jsonKeys(f.Type)
			maps.Copy(required, r)
			maps.Copy(optional, o)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = snakeCase(f.Name)
		}
		switch {
		case strings.Contains(opts, "omitempty"), strings.Contains(opts, "omitzero"):
			optional[name] = true
		default:
			required[name] = true
		}
	}
	return required, optional
}

// embeds reports whether struct t is object or embeds it.
func embeds(t, object reflect.Type) bool {
	if t == object {
		return true
	}
	for f := range t.Fields() {
		if f.Anonymous && embeds(f.Type, object) {
			return true
		}
	}
	return false
}

// at returns the values at path in a decoded document.
func at(v any, path string) []any {
	if path == "" {
		return []any{v}
	}
	key, rest, _ := strings.Cut(path, ".")
	var out []any
	switch {
	case key == "[]":
		list, _ := v.([]any)
		for _, e := range list {
			out = append(out, at(e, rest)...)
		}
	case strings.HasSuffix(key, "[]"):
		m, _ := v.(map[string]any)
		list, _ := m[strings.TrimSuffix(key, "[]")].([]any)
		for _, e := range list {
			out = append(out, at(e, rest)...)
		}
	default:
		m, _ := v.(map[string]any)
		if e, ok := m[key]; ok {
			out = at(e, rest)
		}
	}
	return out
}

// checkObjects checks each object at its place in doc against its
// struct: every required key there, no key the struct does not have. It
// records the objects it saw in seen.
func checkObjects(t *testing.T, cmd string, doc any, where []objectAt, seen map[string]bool) {
	t.Helper()
	for _, w := range where {
		typ, ok := jsonObjects[w.object]
		if !ok {
			t.Fatalf("%s: no object %q", cmd, w.object)
		}
		if w.detail != nil {
			if !embeds(w.detail, typ) {
				t.Errorf("%s prints %s as %v, which does not embed %v", cmd, w.object, w.detail, typ)
			}
			typ = w.detail
		}
		required, optional := jsonKeys(typ)
		for _, v := range at(doc, w.path) {
			obj, ok := v.(map[string]any)
			if !ok {
				t.Errorf("%s at %q: %v is not an object", cmd, w.path, v)
				continue
			}
			seen[w.object] = true
			for k := range required {
				if _, ok := obj[k]; !ok {
					t.Errorf("%s: %s at %q lacks key %q: %v", cmd, w.object, w.path, k, obj)
				}
			}
			for k := range obj {
				if !required[k] && !optional[k] {
					t.Errorf("%s: %s at %q has key %q, not one of %v's", cmd, w.object, w.path, k, typ)
				}
			}
		}
	}
}

// TestJSONOutput runs every command that prints objects with --json,
// compares each output with its golden file, and checks that each object
// has its one shape (jsonObjects) in every command that prints it.
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	url, schema, dead, running, workflow := jsonSetup(t)
	db := []string{"--database-url", url, "--schema", schema}
	with := func(args ...string) []string { return append(args, db...) }
	jobDetail := reflect.TypeFor[jobDetailJSON]()
	seen := map[string]bool{}
	check := func(name string, shape bool, args []string, where ...objectAt) any {
		t.Helper()
		doc := checkGolden(t, name, shape, args...)
		checkObjects(t, strings.Join(args[:min(len(args), 3)], " "), doc, where, seen)
		return doc
	}

	statusObjects := []objectAt{{"", "status", nil}, {"queues[]", "queue status", nil}, {"tables[]", "table", nil},
		{"stuck[]", "stuck job", nil}, {"unserved[]", "unserved kind", nil}, {"workers[]", "worker", nil},
		{"horizon[]", "horizon holder", nil}, {"warnings[]", "warning", nil}, {"events", "event status", nil}}
	status, _ := check("status", true, with("status", "--json"), statusObjects...).(map[string]any)
	for _, q := range status["queues"].([]any) {
		q := q.(map[string]any)
		if lag := q["lag"].(float64); q["queue"] == "mail" && (lag < 100 || lag > 3600) {
			t.Errorf("status --json: mail lag %v, want about 120 (seconds)", lag)
		}
	}
	check("dlq_list", false, with("dlq", "list", "--json", "--kind", "mail", "--limit", "1"), objectAt{"[]", "job", nil})
	check("dlq_list_empty", false, with("dlq", "list", "--json", "--kind", "nothing"))
	check("dlq_show", false, with("dlq", "show", itoa(dead[0]), "--json"), objectAt{"", "job", jobDetail},
		objectAt{"attempt_history[]", "attempt", nil})
	check("dlq_show_payload", false, with("dlq", "show", itoa(dead[0]), "--json", "--payload"), objectAt{"", "job", jobDetail},
		objectAt{"attempt_history[]", "attempt", nil})
	check("jobs_list", false, with("jobs", "list", "--json", "--queue", "mail", "--limit", "2"),
		objectAt{"", "job page", nil}, objectAt{"jobs[]", "job", nil})
	check("jobs_list_dead", false, with("jobs", "list", "--json", "--state", "dead", "--error", "MAILBOX"),
		objectAt{"", "job page", nil}, objectAt{"jobs[]", "job", nil})
	check("jobs_list_running", false, with("jobs", "list", "--json", "--state", "running"),
		objectAt{"", "job page", nil}, objectAt{"jobs[]", "job", nil})
	check("jobs_list_empty", false, with("jobs", "list", "--json", "--kind", "nothing"), objectAt{"", "job page", nil})
	check("jobs_show", false, with("jobs", "show", itoa(dead[0]), "--json"), objectAt{"", "job", jobDetail},
		objectAt{"attempt_history[]", "attempt", nil})
	check("jobs_show_payload", false, with("jobs", "show", itoa(dead[0]), "--json", "--payload"), objectAt{"", "job", jobDetail},
		objectAt{"attempt_history[]", "attempt", nil})
	check("jobs_show_running", false, with("jobs", "show", itoa(running), "--json"), objectAt{"", "job", jobDetail},
		objectAt{"attempt_history[]", "attempt", nil})
	check("queues_list_empty", false, with("queues", "list", "--json"))
	if code, _, errOut := runDocket(t, with("queues", "pause", "mail")...); code != 0 {
		t.Fatal(errOut)
	}
	check("queues_list", false, with("queues", "list", "--json"), objectAt{"[]", "queue", nil})
	check("migrate_list", false, with("migrate", "list", "--json"), objectAt{"[]", "migration", nil})
	check("migrate_status", false, with("migrate", "status", "--json"), objectAt{"", "migrate status", nil})
	check("schedules_list_empty", false, with("schedules", "list", "--json"))
	registerSchedules(t, pgtest.Pool(t), schema, schedule.Schedule{Name: "nightly", Spec: "0 2 * * *", TimeZone: "Europe/Berlin", Args: cliReport{}})
	check("schedules_list", false, with("schedules", "list", "--json"), objectAt{"[]", "schedule", nil})
	check("workflows_list", false, with("workflows", "list", "--json"), objectAt{"[]", "workflow", nil})
	check("workflows_show", false, with("workflows", "show", itoa(workflow), "--json"),
		objectAt{"", "workflow", reflect.TypeFor[workflowDetailJSON]()}, objectAt{"live_or_dead_jobs[]", "workflow job", nil})
	check("limits_list", false, with("limits", "list", "--json"),
		objectAt{"[]", "limit", reflect.TypeFor[limitUsageJSON]()}, objectAt{"[].keys[]", "limit key", nil})
	check("relay_status", false, with("relay", "status", "--json"), objectAt{"", "event status", nil})
	check("relay_dlq_list", false, with("relay", "dlq", "list", "--json"), objectAt{"[]", "dead event", nil})
	check("version", false, []string{"version", "--json"}, objectAt{"", "version", nil})

	for name := range jsonObjects {
		// What holds the vacuum horizon depends on other sessions.
		if !seen[name] && name != "horizon holder" {
			t.Errorf("no command printed a %s: the test cannot check its shape", name)
		}
	}
}

// The short forms of a job elsewhere (a workflow's jobs, a stuck lease)
// use the job's keys, and add only what a job does not have.
func TestJSONJobViewsUseJobKeys(t *testing.T) {
	t.Parallel()
	reqJob, optJob := jsonKeys(reflect.TypeFor[jobJSON]())
	for view, extra := range map[reflect.Type][]string{
		reflect.TypeFor[workflowJobJSON](): {"wait_for", "wait_until", "child_workflow_id"},
		reflect.TypeFor[stuckJobJSON]():    {"overdue"},
	} {
		req, opt := jsonKeys(view)
		for k := range maps.Keys(req) {
			if !reqJob[k] && !optJob[k] && !slices.Contains(extra, k) {
				t.Errorf("%v has key %q, which a job does not", view, k)
			}
		}
		for k := range maps.Keys(opt) {
			if !reqJob[k] && !optJob[k] && !slices.Contains(extra, k) {
				t.Errorf("%v has key %q, which a job does not", view, k)
			}
		}
	}
}

// Every field of what admin, outbox and migrate return is printed by its
// --json object (the names match without underscores and case), or is named
// here as renamed or left out: a field added there without a decision here
// fails.
func TestJSONObjectsCoverTheirSource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src, dst reflect.Type
		renamed  map[string]string // source field -> key
		leftOut  []string          // source fields not printed, and why
	}{
		{src: reflect.TypeFor[admin.JobInfo](), dst: reflect.TypeFor[jobDetailJSON]()},
		{src: reflect.TypeFor[admin.DeadJob](), dst: reflect.TypeFor[jobDetailJSON](), renamed: map[string]string{"DeadAt": "finished_at"}},
		{src: reflect.TypeFor[admin.JobPage](), dst: reflect.TypeFor[jobPageJSON](),
			leftOut: []string{"Scanned"}}, // jobs list sets no JobFilter.Scan: never true here
		{src: reflect.TypeFor[admin.QueueStatus](), dst: reflect.TypeFor[queueStatusJSON]()},
		{src: reflect.TypeFor[admin.WorkerStatus](), dst: reflect.TypeFor[workerJSON]()},
		{src: reflect.TypeFor[admin.TableStatus](), dst: reflect.TypeFor[tableJSON]()},
		{src: reflect.TypeFor[admin.StuckJob](), dst: reflect.TypeFor[stuckJobJSON]()},
		{src: reflect.TypeFor[admin.UnservedKind](), dst: reflect.TypeFor[unservedJSON]()},
		{src: reflect.TypeFor[admin.HorizonHolder](), dst: reflect.TypeFor[horizonJSON]()},
		{src: reflect.TypeFor[admin.Warning](), dst: reflect.TypeFor[warningJSON]()},
		{src: reflect.TypeFor[outbox.EventStatus](), dst: reflect.TypeFor[eventStatusJSON]()},
		{src: reflect.TypeFor[admin.Status](), dst: reflect.TypeFor[statusJSON]()},
		{src: reflect.TypeFor[admin.ScheduleInfo](), dst: reflect.TypeFor[scheduleJSON]()},
		{src: reflect.TypeFor[admin.WorkflowState](), dst: reflect.TypeFor[workflowJSON]()},
		{src: reflect.TypeFor[admin.WorkflowJobState](), dst: reflect.TypeFor[workflowJobJSON]()},
		{src: reflect.TypeFor[admin.Limit](), dst: reflect.TypeFor[limitJSON]()},
		{src: reflect.TypeFor[admin.LimitUsage](), dst: reflect.TypeFor[limitKeyJSON](),
			leftOut: []string{"Limit"}}, // the limit the key is listed under
		{src: reflect.TypeFor[migrate.MigrationStatus](), dst: reflect.TypeFor[migrationJSON](),
			leftOut: []string{"Up", "Down"}}, // the SQL: migrate sql prints it
		{src: reflect.TypeFor[outbox.DeadEvent](), dst: reflect.TypeFor[deadEventJSON]()},
	} {
		req, opt := jsonKeys(c.dst)
		keys := map[string]bool{}
		for k := range req {
			keys[strings.ReplaceAll(k, "_", "")] = true
		}
		for k := range opt {
			keys[strings.ReplaceAll(k, "_", "")] = true
		}
		for _, f := range exportedFields(c.src) {
			switch {
			case slices.Contains(c.leftOut, f):
			case c.renamed[f] != "":
				if !keys[strings.ReplaceAll(c.renamed[f], "_", "")] {
					t.Errorf("%v.%s: %v has no key %q", c.src, f, c.dst, c.renamed[f])
				}
			case !keys[strings.ToLower(f)]:
				t.Errorf("%v.%s is not printed by %v: add it there (and to docs/cli-json.md), or say here why not", c.src, f, c.dst)
			}
		}
	}
}

// exportedFields names a struct's exported fields, those of embedded
// structs included.
func exportedFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			out = append(out, exportedFields(f.Type)...)
		case f.IsExported():
			out = append(out, f.Name)
		}
	}
	return out
}

// docs/cli-json.md lists every object with exactly its keys: a row
// "| name | printed by | `key`, … | `optional key`, … |".
func TestJSONObjectsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli-json.md"))
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile("`([a-z0-9_]+)`")
	keysOf := func(cell string) map[string]bool {
		m := map[string]bool{}
		for _, k := range quoted.FindAllStringSubmatch(cell, -1) {
			m[k[1]] = true
		}
		return m
	}
	listed := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 6 {
			continue
		}
		name := strings.TrimSpace(cells[1])
		typ, ok := jsonObjects[name]
		if !ok {
			continue
		}
		listed[name] = true
		req, opt := jsonKeys(typ)
		if got := keysOf(cells[3]); !maps.Equal(got, req) {
			t.Errorf("docs/cli-json.md, %s: keys %v, want %v", name, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(req)))
		}
		if got := keysOf(cells[4]); !maps.Equal(got, opt) {
			t.Errorf("docs/cli-json.md, %s: optional keys %v, want %v", name, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(opt)))
		}
	}
	for name := range jsonObjects {
		if !listed[name] {
			t.Errorf("docs/cli-json.md has no row for %s", name)
		}
	}
}

func TestJSONPendingMigrations(t *testing.T) {
	t.Parallel()
	args := []string{"migrate", "status", "--json", "--database-url", pgtest.URL(t), "--schema", pgtest.Schema(t)}
	code, out, _ := runDocket(t, args...)
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
