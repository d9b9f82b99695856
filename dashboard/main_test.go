package dashboard_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
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

func TestMain(m *testing.M) { pgtest.Main(m) }

// mail is a job kind whose payload holds personal data.
type mail struct {
	To string `json:"to"`
}

func (mail) Kind() string { return "mail" }

// secret is the payload text that must never reach a page (unless payload
// display is on) or a log line.
const secret = "secret@example.com"

// bundle is a migrated schema with jobs in several states, a dashboard
// server on it and a log of what the dashboard wrote.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	ops    *admin.Client
	h      http.Handler
	srv    *httptest.Server
	log    *syncBuffer
	// ready, running and dead are job ids in those states.
	ready, running, dead int64
}

func setup(t *testing.T, cfg dashboard.Config) *bundle {
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
	b := &bundle{ctx: ctx, pool: pool, schema: schema, ops: ops, log: &syncBuffer{}}
	enqueue := func(q string) int64 {
		e, err := cl.Enqueue(ctx, pool, mail{To: secret}, docket.Opts{Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	b.ready = enqueue("mail")
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
	b.running = jobs[0].ID
	if _, err := q.DeadLetter(ctx, pool, w, []queue.Dead{{Run: queue.RunOf(jobs[1]), Reason: admin.ReasonExhausted, Error: "smtp: 550 mailbox unavailable"}}); err != nil {
		t.Fatal(err)
	}
	b.dead = jobs[1].ID
	cfg.Schema = schema
	cfg.Logger = slog.New(slog.NewTextHandler(b.log, nil))
	h, err := dashboard.Handler(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.h = h
	b.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		b.srv.Close()
		if strings.Contains(b.log.String(), secret) {
			t.Errorf("the dashboard logged a payload:\n%s", b.log)
		}
	})
	return b
}

// client is a browser-like HTTP client: cookies kept, redirects not
// followed (tests look at them).
func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path and returns the status and body.
func get(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// csrf opens a page and returns the CSRF token its forms carry.
func csrf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	code, body, _ := get(t, c, u)
	m := csrfInput.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, no CSRF field:\n%s", u, code, body)
	}
	return m[1]
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
