package dockettest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/dockettest"
	"github.com/docketq/docket/handlers"
)

// With the registry, the DB's client enqueues as the service's client
// does: the kind's registered queue, priority and attempts unless the
// enqueue sets its own, and an unknown kind refused with nothing written.
func TestNewDBWithRegistry(t *testing.T) {
	t.Parallel()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[EmailArgs]) error { return nil },
		handlers.KindOpts{Queue: "mail", Priority: 4, MaxAttempts: 3})
	db := dockettest.NewDB(t, dockettest.WithRegistry(reg))

	enqueue(t, db, EmailArgs{To: "kind@example.com"}, docket.Opts{})
	dockettest.RequireEnqueued(t, db.Pool, EmailArgs{To: "kind@example.com"},
		&dockettest.RequireOpts{Queue: "mail", Priority: new(4), MaxAttempts: 3})
	enqueue(t, db, EmailArgs{To: "own@example.com"}, docket.Opts{Queue: "bulk", Priority: -1, MaxAttempts: 7})
	dockettest.RequireEnqueued(t, db.Pool, EmailArgs{To: "own@example.com"},
		&dockettest.RequireOpts{Queue: "bulk", Priority: new(-1), MaxAttempts: 7})

	_, err := db.Client.Enqueue(t.Context(), db.Pool, SmsArgs{Phone: "+100"}, docket.Opts{})
	if !errors.Is(err, docket.ErrUnknownKind) {
		t.Fatalf("enqueue of an unregistered kind: %v, want ErrUnknownKind", err)
	}
	dockettest.RequireNotEnqueued(t, db.Pool, SmsArgs{}, nil)
}

// Without a registry the client is an enqueue-only one: any kind, the
// built-in defaults.
func TestNewDBWithoutRegistry(t *testing.T) {
	t.Parallel()
	db := dockettest.NewDB(t, dockettest.WithRegistry(nil), nil)
	enqueue(t, db, SmsArgs{Phone: "+100"}, docket.Opts{})
	dockettest.RequireEnqueued(t, db.Pool, SmsArgs{Phone: "+100"},
		&dockettest.RequireOpts{Queue: docket.DefaultQueue, Priority: new(0), MaxAttempts: docket.DefaultMaxAttempts})
}
