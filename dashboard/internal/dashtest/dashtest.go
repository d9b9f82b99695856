// Package dashtest is the dashboard's test fixture: a migrated schema with
// jobs in several states and a dashboard server on it, shared by the
// dashboard's tests and its browser tests (a module of their own).
package dashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Mail is a job kind whose payload holds personal data.
type Mail struct {
	To string `json:"to"`
}

func (Mail) Kind() string { return "mail" }

// Secret is the payload text that must never reach a page (unless payload
// display is on) or a log line.
const Secret = "secret@example.com"

var CSRFInput = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// Bundle is a migrated schema with jobs in several states, a dashboard
// server on it and a log of what the dashboard wrote.
type Bundle struct {
	Ctx     context.Context
	Pool    *pgxpool.Pool
	Schema  string
	Ops     *admin.Client
	Handler http.Handler
	Srv     *httptest.Server
	Log     *SyncBuffer // what the dashboard logged
	// Ready, Running and Dead are job ids in those states.
	Ready, Running, Dead int64
}

// Setup migrates a fresh schema, puts a ready mail job in queue mail, one
// running and one dead in queue bounce, and serves a dashboard of cfg (with
// the schema and a logger set) on it; the test fails if the dashboard
// logged Secret.
func Setup(t *testing.T, cfg dashboard.Config) *Bundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	cl, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	b := &Bundle{Ctx: ctx, Pool: pool, Schema: schema, Ops: ops, Log: &SyncBuffer{}}
	enqueue := func(q string) int64 {
		e, err := cl.Enqueue(ctx, pool, Mail{To: Secret}, docket.Opts{Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	b.Ready = enqueue("mail")
	enqueue("bounce")
	enqueue("bounce")
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: w, Queues: []string{"bounce"}, Kinds: []string{"mail"}, Limit: 2, Lease: time.Hour})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	b.Running = jobs[0].ID
	// The dead job's handler recorded a result on its last attempt.
	dead := queue.RunOf(jobs[1])
	dead.Result = json.RawMessage(`{"note": "<b>tried 2 relays</b>"}`)
	if _, err := q.DeadLetter(ctx, pool, w, []queue.Dead{{Run: dead, Reason: admin.ReasonExhausted, Error: "smtp: 550 mailbox unavailable"}}); err != nil {
		t.Fatal(err)
	}
	b.Dead = jobs[1].ID
	cfg.Schema = schema
	cfg.Logger = slog.New(slog.NewTextHandler(b.Log, nil))
	h, err := dashboard.Handler(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Handler = h
	b.Srv = httptest.NewServer(h)
	t.Cleanup(func() {
		b.Srv.Close()
		if strings.Contains(b.Log.String(), Secret) {
			t.Errorf("the dashboard logged a payload:\n%s", b.Log)
		}
	})
	return b
}

// SyncBuffer is a log sink safe for the server's goroutines.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// DeadN dead-letters n more mail jobs of queue q with error msg.
func (b *Bundle) DeadN(t testing.TB, q string, n int, msg string) {
	t.Helper()
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]docket.Item, n)
	for i := range items {
		items[i] = docket.Item{Args: Mail{To: Secret}, Opts: docket.Opts{Queue: q}}
	}
	if _, err := cl.EnqueueMany(b.Ctx, b.Pool, items); err != nil {
		t.Fatal(err)
	}
	qq, err := queue.New(b.Schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs, err := qq.Claim(b.Ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{q}, Kinds: []string{"mail"}, Limit: n, Lease: time.Hour})
	if err != nil || len(jobs) != n {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	dead := make([]queue.Dead, n)
	for i, j := range jobs {
		dead[i] = queue.Dead{Run: queue.RunOf(j), Reason: admin.ReasonExhausted, Error: msg}
	}
	if _, err := qq.DeadLetter(b.Ctx, b.Pool, w, dead); err != nil {
		t.Fatal(err)
	}
}
