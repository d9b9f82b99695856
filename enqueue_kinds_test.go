package docket_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
)

// registered is the registry of the service under test: kinds with
// defaults of their own, and a kind (bare) without.
func registered() *handlers.Registry {
	r := handlers.NewRegistry()
	handlers.MustRegister(r, func(context.Context, *handlers.Job[noop]) error { return nil },
		handlers.KindOpts{Queue: "mail", Priority: 3, MaxAttempts: 7})
	handlers.MustRegister(r, func(context.Context, *handlers.Job[ownOpts]) error { return nil },
		handlers.KindOpts{Queue: "kind-queue", Priority: 2, MaxAttempts: 4})
	handlers.MustRegister(r, func(context.Context, *handlers.Job[bare]) error { return nil }, handlers.KindOpts{})
	return r
}

// ownOpts carries its own options (docket.OptsProvider).
type ownOpts struct{}

func (ownOpts) Kind() string { return "own" }
func (ownOpts) Opts() docket.Opts {
	return docket.Opts{Queue: "own-queue", UniqueKey: "own-key"}
}

// stored is what a job's row says about its resolved options.
type stored struct {
	queue       string
	priority    int
	maxAttempts int
	uniqueKey   string
}

func (b *bundle) stored(t *testing.T, id int64) stored {
	t.Helper()
	var s stored
	var key *string
	err := b.Pool.QueryRow(b.Ctx, `SELECT queue, priority, max_attempts, unique_key FROM `+b.Table("docket_jobs")+` WHERE id = $1`, id).
		Scan(&s.queue, &s.priority, &s.maxAttempts, &key)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		s.uniqueKey = *key
	}
	return s
}

// Every enqueue path of a client with Kinds applies the kind's defaults and
// rejects a kind Kinds does not know, writing nothing and leaving the
// caller's transaction usable: pgx single, pgx bulk (COPY), database/sql
// single and bulk.
func TestKindDefaultsOnEveryPath(t *testing.T) {
	t.Parallel()
	b := setup(t, docket.Config{Registry: registered()})
	c := newCaller(t, b.Pool, b.Schema)
	paths := []struct {
		name   string
		driver string
		many   bool
	}{
		{"pgx Enqueue", "pgx", false},
		{"pgx EnqueueMany (COPY)", "pgx", true},
		{"EnqueueSQL", "database/sql", false},
		{"EnqueueManySQL", "database/sql", true},
	}
	for i, p := range paths {
		enq := func(db handle, args core.Args) (docket.Enqueued, error) {
			if !p.many {
				return enqueueVia(b.Ctx, b.client, db, args, docket.Opts{})
			}
			out, err := enqueueManyVia(b.Ctx, b.client, db, []docket.Item{{Args: args}})
			if err != nil {
				return docket.Enqueued{}, err
			}
			return out[0], nil
		}

		db, commit := c.begin(t, p.driver, 2*i)
		res, err := enq(db, noop{})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		c.commitKeeps(t, commit, 2*i)
		if got, want := b.stored(t, res.ID), (stored{"mail", 3, 7, ""}); got != want {
			t.Errorf("%s: stored %+v, want the kind's defaults %+v", p.name, got, want)
		}

		before := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs"))
		db, commit = c.begin(t, p.driver, 2*i+1)
		_, err = enq(db, other{})
		if !errors.Is(err, docket.ErrUnknownKind) || !strings.Contains(err.Error(), `"other"`) {
			t.Errorf("%s: unknown kind: %v, want ErrUnknownKind naming it", p.name, err)
		}
		c.commitKeeps(t, commit, 2*i+1)
		if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")); n != before {
			t.Errorf("%s: unknown kind wrote %d jobs", p.name, n-before)
		}
	}
}

// Precedence: explicit non-zero Opts > the args' own Opts > the kind's
// registered defaults > built-in defaults; the same on the bulk path.
func TestKindDefaultsPrecedence(t *testing.T) {
	t.Parallel()
	b := setup(t, docket.Config{Registry: registered()})
	one := func(args core.Args, opts docket.Opts) stored {
		t.Helper()
		res, err := b.client.Enqueue(b.Ctx, b.Pool, args, opts)
		if err != nil {
			t.Fatal(err)
		}
		return b.stored(t, res.ID)
	}
	for _, tc := range []struct {
		name string
		got  stored
		want stored
	}{
		{"kind's defaults", one(noop{N: 1}, docket.Opts{}), stored{"mail", 3, 7, ""}},
		{"explicit opts win", one(noop{N: 2}, docket.Opts{Queue: "other", Priority: -1, MaxAttempts: 9}), stored{"other", -1, 9, ""}},
		{"explicit opts win field by field", one(noop{N: 3}, docket.Opts{MaxAttempts: 2}), stored{"mail", 3, 2, ""}},
		{"args' own opts win over the kind's", one(ownOpts{}, docket.Opts{}), stored{"own-queue", 2, 4, "own-key"}},
		{"built-in defaults last", one(bare{}, docket.Opts{}), stored{"default", 0, docket.DefaultMaxAttempts, ""}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: stored %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	items := []docket.Item{{Args: noop{N: 4}}, {Args: noop{N: 5}, Opts: docket.Opts{Queue: "x"}}}
	out, err := b.client.EnqueueMany(b.Ctx, b.Pool, items)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.stored(t, out[0].ID); got != (stored{"mail", 3, 7, ""}) {
		t.Errorf("EnqueueMany defaults: %+v", got)
	}
	if got := b.stored(t, out[1].ID); got != (stored{"x", 3, 7, ""}) {
		t.Errorf("EnqueueMany explicit queue: %+v", got)
	}
	if items[0].Opts.Queue != "" {
		t.Error("EnqueueMany modified the caller's items")
	}
	// One unknown kind fails the whole batch, naming the item.
	_, err = b.client.EnqueueMany(b.Ctx, b.Pool, []docket.Item{{Args: noop{}}, {Args: other{}}})
	if !errors.Is(err, docket.ErrUnknownKind) || !strings.Contains(err.Error(), "item 1") {
		t.Errorf("bulk with an unknown kind: %v", err)
	}
}

type bare struct{}

func (bare) Kind() string { return "bare" }
