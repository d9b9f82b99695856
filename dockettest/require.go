package dockettest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5"
)

// T is the part of testing.TB the assertions use; *testing.T and
// *testing.B satisfy it. Fatalf must not return (testing's calls
// runtime.Goexit).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// DefaultTolerance is how far a job's run_at may be from
// RequireOpts.ScheduledAt when RequireOpts.Tolerance is zero.
const DefaultTolerance = time.Second

// RequireOpts narrows what an assertion accepts beyond kind and args. The
// zero value (or a nil *RequireOpts) matches any job of the kind.
type RequireOpts struct {
	// Schema holds the jobs table. Empty means the table the connection's
	// search_path finds, which is the test's schema for [DB.Pool].
	Schema string
	// Queue, when set, is the queue the job must be in.
	Queue string
	// Priority, when not nil, is the job's priority (new(0) requires the
	// default).
	Priority *int
	// MaxAttempts, when positive, is the job's attempt limit.
	MaxAttempts int
	// UniqueKey, Tenant and SerialKey, when set, must equal the job's.
	UniqueKey, Tenant, SerialKey string
	// ScheduledAt, when not zero, is when the job must be due to run:
	// its run_at is within Tolerance of it.
	ScheduledAt time.Time
	// Tolerance is the allowed distance from ScheduledAt. Zero means
	// DefaultTolerance.
	Tolerance time.Duration
}

// Expected is one job [RequireManyEnqueued] looks for.
type Expected struct {
	// Args gives the kind and, through its JSON, the fields the payload
	// must contain.
	Args docket.Args
	// Opts narrows the match further; nil accepts any queue, priority...
	Opts *RequireOpts
}

// RequireEnqueued asserts that exactly one job in the jobs table (as seen by
// db, which may be the transaction that enqueued it) is of expected's kind,
// has a payload containing expected's JSON (every field of expected's JSON
// object appears with an equal, or for objects containing, value, as
// jsonb's @> compares), and matches opts. It returns that job. Otherwise it calls t.Fatalf
// with the reason and the jobs that were enqueued (kinds, queues, and
// payloads of the kind asked for only).
func RequireEnqueued[A docket.Args](t T, db docket.DB, expected A, opts *RequireOpts) *docket.Job {
	t.Helper()
	return RequireEnqueuedKind(t, db, expected.Kind(), expected, opts)
}

// RequireEnqueuedKind is [RequireEnqueued] for a kind given by name, with
// args any value that marshals to a JSON object (a map, a struct, a
// json.RawMessage), or nil to accept any payload. It fails the test if args
// does not marshal.
func RequireEnqueuedKind(t T, db docket.DB, kind string, args any, opts *RequireOpts) *docket.Job {
	t.Helper()
	jobs := load(t, db, opts)
	want := expectation(t, kind, args, opts)
	var found []*docket.Job
	for _, r := range jobs {
		if want.mismatch(r) == "" {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 1:
		return found[0]
	case 0:
		t.Fatalf("dockettest: no job matches %s\n%s", want, describe(jobs, want))
	default:
		t.Fatalf("dockettest: %d jobs match %s, want exactly one (use RequireManyEnqueued)\n%s",
			len(found), want, describe(jobs, want))
	}
	return nil
}

// RequireNotEnqueued asserts that no job in the jobs table matches what
// [RequireEnqueued] would accept; it fails the test naming those that do.
func RequireNotEnqueued[A docket.Args](t T, db docket.DB, expected A, opts *RequireOpts) {
	t.Helper()
	RequireNotEnqueuedKind(t, db, expected.Kind(), expected, opts)
}

// RequireNotEnqueuedKind is [RequireNotEnqueued] for a kind given by name;
// args is as for [RequireEnqueuedKind].
func RequireNotEnqueuedKind(t T, db docket.DB, kind string, args any, opts *RequireOpts) {
	t.Helper()
	jobs := load(t, db, opts)
	want := expectation(t, kind, args, opts)
	for _, r := range jobs {
		if want.mismatch(r) == "" {
			t.Fatalf("dockettest: job %d matches %s, want none\n%s", r.ID, want, describe(jobs, want))
		}
	}
}

// RequireManyEnqueued asserts that the jobs table holds exactly
// len(expected) jobs and that, in the order they were enqueued (by id), the
// i-th matches expected[i] as [RequireEnqueued] matches. It returns the
// jobs. The tables named by the first Opts.Schema are read.
func RequireManyEnqueued(t T, db docket.DB, expected []Expected) []*docket.Job {
	t.Helper()
	var first *RequireOpts
	if len(expected) > 0 {
		first = expected[0].Opts
	}
	jobs := load(t, db, first)
	wants := make([]*matcher, len(expected))
	for i, e := range expected {
		if e.Args == nil {
			t.Fatalf("dockettest: expected[%d] has no Args", i)
		}
		wants[i] = expectation(t, e.Args.Kind(), e.Args, e.Opts)
	}
	if len(jobs) != len(expected) {
		t.Fatalf("dockettest: %d jobs enqueued, want %d\n%s", len(jobs), len(expected), describe(jobs, wants...))
	}
	out := make([]*docket.Job, len(jobs))
	for i, w := range wants {
		if why := w.mismatch(jobs[i]); why != "" {
			t.Fatalf("dockettest: job %d (enqueued #%d) does not match %s: %s\n%s",
				jobs[i].ID, i+1, w, why, describe(jobs, wants...))
		}
		out[i] = jobs[i]
	}
	return out
}

// load reads every job of the jobs table, in id order.
func load(t T, db docket.DB, opts *RequireOpts) []*docket.Job {
	t.Helper()
	table := "docket_jobs"
	if opts != nil && opts.Schema != "" {
		table = pgx.Identifier{opts.Schema, table}.Sanitize()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.Query(ctx, `SELECT id, queue, kind, priority, run_at, created_at, attempts, max_attempts,
	       coalesce(unique_key, ''), tenant, coalesce(serial_key, ''), payload, meta
	  FROM `+table+` ORDER BY id`)
	if err != nil {
		t.Fatalf("dockettest: read %s: %v", table, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*docket.Job, error) {
		j := &docket.Job{}
		var meta map[string]string
		err := r.Scan(&j.ID, &j.Queue, &j.Kind, &j.Priority, &j.RunAt, &j.CreatedAt, &j.Attempt, &j.MaxAttempts,
			&j.UniqueKey, &j.Tenant, &j.SerialKey, &j.Payload, &meta)
		j.Meta = meta
		return j, err
	})
	if err != nil {
		t.Fatalf("dockettest: read %s: %v", table, err)
	}
	return out
}

// matcher is one expected job.
type matcher struct {
	kind string
	args json.RawMessage // nil: any payload
	opts RequireOpts
}

func expectation(t T, kind string, args any, opts *RequireOpts) *matcher {
	t.Helper()
	m := &matcher{kind: kind}
	if opts != nil {
		m.opts = *opts
	}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("dockettest: expected args of kind %s do not marshal: %v", kind, err)
		}
		m.args = b
	}
	return m
}

// String describes the expectation for failure messages.
func (m *matcher) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind %q", m.kind)
	if m.args != nil {
		fmt.Fprintf(&b, " with args containing %s", m.args)
	}
	o := m.opts
	if o.Queue != "" {
		fmt.Fprintf(&b, ", queue %q", o.Queue)
	}
	if o.Priority != nil {
		fmt.Fprintf(&b, ", priority %d", *o.Priority)
	}
	if o.MaxAttempts > 0 {
		fmt.Fprintf(&b, ", max attempts %d", o.MaxAttempts)
	}
	if o.UniqueKey != "" {
		fmt.Fprintf(&b, ", unique key %q", o.UniqueKey)
	}
	if o.Tenant != "" {
		fmt.Fprintf(&b, ", tenant %q", o.Tenant)
	}
	if o.SerialKey != "" {
		fmt.Fprintf(&b, ", serial key %q", o.SerialKey)
	}
	if !o.ScheduledAt.IsZero() {
		fmt.Fprintf(&b, ", run at %s ± %s", o.ScheduledAt.UTC().Format(time.RFC3339Nano), m.tolerance())
	}
	return b.String()
}

func (m *matcher) tolerance() time.Duration {
	if m.opts.Tolerance > 0 {
		return m.opts.Tolerance
	}
	return DefaultTolerance
}

// mismatch says why r does not match, or "" if it does.
func (m *matcher) mismatch(j *docket.Job) string {
	o := m.opts
	switch {
	case j.Kind != m.kind:
		return fmt.Sprintf("kind is %q", j.Kind)
	case m.args != nil && !contains(m.args, j.Payload):
		return "payload does not contain the expected args"
	case o.Queue != "" && j.Queue != o.Queue:
		return fmt.Sprintf("queue is %q", j.Queue)
	case o.Priority != nil && j.Priority != *o.Priority:
		return fmt.Sprintf("priority is %d", j.Priority)
	case o.MaxAttempts > 0 && j.MaxAttempts != o.MaxAttempts:
		return fmt.Sprintf("max attempts is %d", j.MaxAttempts)
	case o.UniqueKey != "" && j.UniqueKey != o.UniqueKey:
		return fmt.Sprintf("unique key is %q", j.UniqueKey)
	case o.Tenant != "" && j.Tenant != o.Tenant:
		return fmt.Sprintf("tenant is %q", j.Tenant)
	case o.SerialKey != "" && j.SerialKey != o.SerialKey:
		return fmt.Sprintf("serial key is %q", j.SerialKey)
	case !o.ScheduledAt.IsZero() && j.RunAt.Sub(o.ScheduledAt).Abs() > m.tolerance():
		return fmt.Sprintf("run at %s", j.RunAt.UTC().Format(time.RFC3339Nano))
	}
	return ""
}

// describe lists the jobs for a failure message: every job's id, kind and
// queue, and for jobs of a kind asked for, their payload and why they do
// not match.
func describe(jobs []*docket.Job, wants ...*matcher) string {
	if len(jobs) == 0 {
		return "no jobs are enqueued"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "jobs enqueued (%d):", len(jobs))
	for _, j := range jobs {
		fmt.Fprintf(&b, "\n  job %d: kind %q, queue %q", j.ID, j.Kind, j.Queue)
		for _, w := range wants {
			if w.kind != j.Kind {
				continue
			}
			fmt.Fprintf(&b, ", priority %d, run at %s, payload %s", j.Priority, j.RunAt.UTC().Format(time.RFC3339Nano), j.Payload)
			if why := w.mismatch(j); why != "" {
				fmt.Fprintf(&b, " (%s)", why)
			}
			break
		}
	}
	return b.String()
}

// contains reports whether the JSON value want is contained in got: equal
// scalars; for objects, every key of want is in got with a contained
// value; for arrays, every element of want is contained in some element of
// got (PostgreSQL's jsonb @>, without its scalar-in-array special case).
func contains(want, got json.RawMessage) bool {
	var w, g any
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(got, &g) != nil {
		return false
	}
	return containsValue(w, g)
}

func containsValue(w, g any) bool {
	switch w := w.(type) {
	case map[string]any:
		g, ok := g.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !containsValue(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := g.([]any)
		if !ok {
			return false
		}
		for _, wv := range w {
			if !containsAny(wv, g) {
				return false
			}
		}
		return true
	default:
		return w == g // strings, float64, bool, nil
	}
}

func containsAny(w any, gs []any) bool {
	for _, g := range gs {
		if containsValue(w, g) {
			return true
		}
	}
	return false
}
