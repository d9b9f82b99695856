package dockettest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/dockettest"
)

// fakeT records a failure the way testing.T ends a test: Fatalf stops the
// goroutine.
type fakeT struct{ failure string }

func (*fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a fakeT in its own goroutine and returns the
// failure message, "" if fn passed.
func failure(fn func(t dockettest.T)) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.failure
}

// SmsArgs is a second kind, whose payload must stay out of messages about
// other kinds.
type SmsArgs struct {
	Phone string `json:"phone"`
}

func (SmsArgs) Kind() string { return "sms" }

func enqueue(t *testing.T, db *dockettest.DB, args interface{ Kind() string }, opts docket.Opts) int64 {
	t.Helper()
	res, err := db.Client.Enqueue(context.Background(), db.Pool, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

func wantFailure(t *testing.T, msg string, parts ...string) {
	t.Helper()
	if msg == "" {
		t.Fatalf("the assertion passed; want a failure containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("failure message lacks %q:\n%s", p, msg)
		}
	}
}

func TestRequireEnqueuedMismatchListsJobs(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	email := enqueue(t, db, EmailArgs{To: "ada@example.com"}, docket.Opts{Queue: "mail"})
	sms := enqueue(t, db, SmsArgs{Phone: "+4930123"}, docket.Opts{})

	msg := failure(func(ft dockettest.T) {
		dockettest.RequireEnqueued(ft, db.Pool, EmailArgs{To: "bob@example.com"}, nil)
	})
	t.Logf("what a user sees:\n%s", msg)
	wantFailure(t, msg,
		`no job matches kind "email" with args containing {"to":"bob@example.com"}`,
		"jobs enqueued (2):",
		fmt.Sprintf(`job %d: kind "email", queue "mail"`, email),
		`"ada@example.com"`,
		"(payload does not contain the expected args)",
		fmt.Sprintf(`job %d: kind "sms", queue "default"`, sms),
	)
	if strings.Contains(msg, "+4930123") {
		t.Errorf("the payload of a kind not asked for is in the message:\n%s", msg)
	}
}

func TestRequireEnqueuedOptsMismatch(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	at := time.Now().Add(time.Hour)
	enqueue(t, db, EmailArgs{To: "ada@example.com"}, docket.Opts{Queue: "mail", Priority: 1, RunAt: at,
		UniqueKey: "u1", Tenant: "acme", SerialKey: "s1", MaxAttempts: 3})
	args := EmailArgs{To: "ada@example.com"}
	for _, c := range []struct {
		opts dockettest.RequireOpts
		want string
	}{
		{dockettest.RequireOpts{Queue: "default"}, `(queue is "mail")`},
		{dockettest.RequireOpts{Priority: new(0)}, "(priority is 1)"},
		{dockettest.RequireOpts{MaxAttempts: 25}, "(max attempts is 3)"},
		{dockettest.RequireOpts{UniqueKey: "u2"}, `(unique key is "u1")`},
		{dockettest.RequireOpts{Tenant: "globex"}, `(tenant is "acme")`},
		{dockettest.RequireOpts{SerialKey: "s2"}, `(serial key is "s1")`},
		{dockettest.RequireOpts{ScheduledAt: at.Add(2 * time.Second)}, "(run at "},
	} {
		msg := failure(func(ft dockettest.T) { dockettest.RequireEnqueued(ft, db.Pool, args, &c.opts) })
		wantFailure(t, msg, "no job matches", c.want)
	}
	// Every option matching passes, the run time within the tolerance.
	opts := dockettest.RequireOpts{Queue: "mail", Priority: new(1), UniqueKey: "u1", Tenant: "acme",
		SerialKey: "s1", MaxAttempts: 3, ScheduledAt: at.Add(2 * time.Second), Tolerance: 3 * time.Second}
	if msg := failure(func(ft dockettest.T) { dockettest.RequireEnqueued(ft, db.Pool, args, &opts) }); msg != "" {
		t.Fatal(msg)
	}
}

func TestRequireEnqueuedTwoMatches(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	enqueue(t, db, EmailArgs{To: "ada@example.com", Subject: "a"}, docket.Opts{})
	enqueue(t, db, EmailArgs{To: "ada@example.com", Subject: "b"}, docket.Opts{})
	msg := failure(func(ft dockettest.T) {
		dockettest.RequireEnqueuedKind(ft, db.Pool, "email", map[string]string{"to": "ada@example.com"}, nil)
	})
	wantFailure(t, msg, "2 jobs match", "want exactly one")
}

func TestRequireEnqueuedEmpty(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	msg := failure(func(ft dockettest.T) { dockettest.RequireEnqueued(ft, db.Pool, EmailArgs{}, nil) })
	wantFailure(t, msg, "no jobs are enqueued")
}

func TestRequireEnqueuedOtherSchema(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	enqueue(t, db, EmailArgs{To: "ada@example.com"}, docket.Opts{})
	other := dockettest.NewDB(t)
	// other's pool finds its own, empty, table unless told the schema.
	opts := &dockettest.RequireOpts{Schema: db.Schema}
	if msg := failure(func(ft dockettest.T) {
		dockettest.RequireEnqueued(ft, other.Pool, EmailArgs{To: "ada@example.com"}, opts)
	}); msg != "" {
		t.Fatal(msg)
	}
	wantFailure(t, failure(func(ft dockettest.T) {
		dockettest.RequireEnqueued(ft, other.Pool, EmailArgs{To: "ada@example.com"}, nil)
	}), "no jobs are enqueued")
	wantFailure(t, failure(func(ft dockettest.T) {
		dockettest.RequireEnqueued(ft, other.Pool, EmailArgs{}, &dockettest.RequireOpts{Schema: "no_such_schema"})
	}), `read "no_such_schema"."docket_jobs"`)
}

func TestRequireNotEnqueued(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	id := enqueue(t, db, EmailArgs{To: "ada@example.com"}, docket.Opts{})
	msg := failure(func(ft dockettest.T) {
		dockettest.RequireNotEnqueued(ft, db.Pool, EmailArgs{To: "ada@example.com"}, nil)
	})
	wantFailure(t, msg, fmt.Sprintf("job %d matches kind \"email\"", id), "want none")
	if msg := failure(func(ft dockettest.T) {
		dockettest.RequireNotEnqueued(ft, db.Pool, EmailArgs{To: "ada@example.com"}, &dockettest.RequireOpts{Queue: "other"})
	}); msg != "" {
		t.Fatal(msg)
	}
}

func TestRequireManyEnqueued(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	enqueue(t, db, EmailArgs{To: "ada@example.com"}, docket.Opts{})
	sms := enqueue(t, db, SmsArgs{Phone: "+4930123"}, docket.Opts{})

	wantFailure(t, failure(func(ft dockettest.T) {
		dockettest.RequireManyEnqueued(ft, db.Pool, []dockettest.Expected{{Args: EmailArgs{To: "ada@example.com"}}})
	}), "2 jobs enqueued, want 1")
	wantFailure(t, failure(func(ft dockettest.T) {
		dockettest.RequireManyEnqueued(ft, db.Pool, []dockettest.Expected{
			{Args: EmailArgs{To: "ada@example.com"}},
			{Args: SmsArgs{Phone: "+4930999"}},
		})
	}), fmt.Sprintf("job %d (enqueued #2) does not match kind \"sms\"", sms), "payload does not contain the expected args")
	wantFailure(t, failure(func(ft dockettest.T) {
		dockettest.RequireManyEnqueued(ft, db.Pool, []dockettest.Expected{{Args: SmsArgs{Phone: "+4930123"}}, {Args: EmailArgs{}}})
	}), `does not match kind "sms"`, `kind is "email"`)
	if msg := failure(func(ft dockettest.T) {
		dockettest.RequireManyEnqueued(ft, db.Pool, []dockettest.Expected{{Args: EmailArgs{To: "ada@example.com"}}, {Args: SmsArgs{Phone: "+4930123"}}})
	}); msg != "" {
		t.Fatal(msg)
	}
}

func TestRequireArgsThatDoNotMarshal(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t)
	wantFailure(t, failure(func(ft dockettest.T) {
		dockettest.RequireEnqueuedKind(ft, db.Pool, "email", make(chan int), nil)
	}), "expected args of kind email do not marshal")
}
