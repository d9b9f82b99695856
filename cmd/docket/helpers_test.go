package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5/pgxpool"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// syncBuffer is a bytes buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// enqueueClient returns a client of schema through pool with no registry:
// it enqueues any kind with the built-in defaults, as the client of a
// service that only enqueues does. It is not started.
func enqueueClient(t *testing.T, pool *pgxpool.Pool, schema string) *docket.Client {
	t.Helper()
	c, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// registerSchedules writes schedules into schema as a client's Start does,
// by a service with no registry: their rows store no run options.
func registerSchedules(t *testing.T, pool *pgxpool.Pool, schema string, schedules ...schedule.Schedule) {
	t.Helper()
	jobs, err := enqueue.New(enqueue.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := scheduler.New(scheduler.Config{DB: pool, Jobs: jobs, ReconcileInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Register(context.Background(), schedules...); err != nil {
		t.Fatal(err)
	}
}
