package admin_test

import (
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
)

// Limits.Usage counts each key's places in use under the limit that
// governs them (the kind's before the queue's), per tenant for a
// per-tenant limit: a worker's running jobs of the key, but no more than
// the places it holds of it. It reads a bucket's tokens refilled up to
// now.
func TestLimitUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, l := range []admin.Limit{
		{Name: "per-tenant", Queue: "default", PerTenant: true, MaxRunning: 10},
		{Name: "other-kind", Kind: "other", MaxRunning: 10},
		{Name: "rate", Queue: "idle", Rate: 10, Per: time.Second},
	} {
		if err := b.ops.Limits().Set(b.Ctx, b.Pool, l); err != nil {
			t.Fatal(err)
		}
	}
	b.EnqueueN(t, 3, enqueue.Opts{Tenant: "acme"})
	b.EnqueueN(t, 2, enqueue.Opts{Tenant: "globex"})
	b.EnqueueN(t, 1, enqueue.Opts{})
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, other{}, enqueue.Opts{Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"noop", "other"}, Limit: 10, Lease: time.Hour})
	if err != nil || len(jobs) != 7 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	// The worker holds 2 of acme's places for its 3 jobs; another holds 4
	// and has no job of acme running.
	if _, err := b.Pool.Exec(b.Ctx, `INSERT INTO `+b.Table("docket_limit_places")+` VALUES
		('per-tenant', 'acme', $1, 2), ('per-tenant', 'acme', $2, 4)`, w, uuid.New()); err != nil {
		t.Fatal(err)
	}
	// A bucket emptied half a second ago has refilled five tokens.
	if _, err := b.Pool.Exec(b.Ctx, `INSERT INTO `+b.Table("docket_limit_buckets")+` VALUES ('rate', '', 0, now() - interval '500 milliseconds')`); err != nil {
		t.Fatal(err)
	}
	usage, err := b.ops.Limits().Usage(b.Ctx, b.Pool)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]admin.LimitUsage{}
	for _, u := range usage {
		got[u.Limit+"/"+u.Tenant] = u
	}
	want := map[string]int{"other-kind/": 1, "per-tenant/acme": 2, "per-tenant/globex": 2, "per-tenant/": 1, "rate/": 0}
	if len(got) != len(want) {
		t.Errorf("usage: %+v", usage)
	}
	for k, n := range want {
		if u, ok := got[k]; !ok || u.Running != n {
			t.Errorf("%s: %+v, want %d running", k, u, n)
		}
	}
	if u := got["rate/"]; u.Tokens != 0 || u.TokensNow < 5 || u.TokensNow > 10 {
		t.Errorf("rate bucket: %+v, want 0 stored and 5 to 10 now", u)
	}
	if u := got["per-tenant/acme"]; u.Tokens != -1 || u.TokensNow != -1 {
		t.Errorf("a key without bucket: %+v", u)
	}
}
