package queue_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
)

func (b *bundle) claimLimited(t *testing.T, limit string, worker uuid.UUID, max int, perTenant bool) queue.LimitedClaim {
	t.Helper()
	res, err := b.Q.ClaimLimited(b.Ctx, b.Pool, queue.LimitedClaimParams{
		Limit: limit, Worker: worker, Queues: []string{"default"}, Kinds: []string{"noop"}, Max: max, Lease: time.Minute,
		PerTenant: perTenant,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (b *bundle) setLimit(t *testing.T, l admin.Limit) {
	t.Helper()
	if err := b.ops.Limits().Set(b.Ctx, b.Pool, l); err != nil {
		t.Fatal(err)
	}
}

// A per-tenant concurrency limit gives a worker the places of each tenant
// that other workers do not use, and up to 4 jobs per place to run within
// them (migration 027). A worker uses a tenant's places as far as it holds
// jobs of the tenant: another worker gets them as the first one's jobs
// leave the running state, by an outcome or by the reaper. Jobs without a
// tenant get a place each, as before.
func TestClaimLimitedConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setLimit(t, admin.Limit{Name: "noop_tenants", Kind: "noop", PerTenant: true, MaxRunning: 2})
	for _, tenant := range []string{"a", "b", ""} {
		b.EnqueueN(t, 10, enqueue.Opts{Tenant: tenant})
	}
	perTenant := func(c queue.LimitedClaim) string {
		per := map[string]int{}
		for _, j := range c.Jobs {
			per[j.Tenant]++
		}
		return fmt.Sprint(per)
	}
	w, other := uuid.New(), uuid.New()
	first := b.claimLimited(t, "noop_tenants", w, 100, true)
	if got := perTenant(first); got != "map[:2 a:8 b:8]" || fmt.Sprint(first.Places) != "map[a:2 b:2]" {
		t.Fatalf("first claim took %s per tenant with places %v, want 8 jobs and 2 places of a and b, 2 jobs without a tenant",
			got, first.Places)
	}
	if !first.Held || first.Wait != 0 {
		t.Fatalf("first claim: held %v wait %s, want held until a job ends", first.Held, first.Wait)
	}
	if again := b.claimLimited(t, "noop_tenants", other, 100, true); len(again.Jobs) != 0 || !again.Held {
		t.Fatalf("a full limit granted another worker %d jobs (held %v)", len(again.Jobs), again.Held)
	}

	var a, bj []queue.Run
	for _, j := range first.Jobs {
		switch j.Tenant {
		case "a":
			a = append(a, queue.RunOf(j))
		case "b":
			bj = append(bj, queue.RunOf(j))
		}
	}
	// w still holds 2 of a's jobs, as many as its places: the others get none.
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w, a[:6], time.Time{}); err != nil || len(done) != 6 {
		t.Fatalf("complete: %v %v", done, err)
	}
	if again := b.claimLimited(t, "noop_tenants", other, 100, true); len(again.Jobs) != 0 {
		t.Fatalf("another worker got %s while the first held as many jobs of a as its places", perTenant(again))
	}
	// One job of a left to w, and all of b's reaped: the other worker
	// gets a's second place, and both of b's.
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w, a[6:7], time.Time{}); err != nil || len(done) != 1 {
		t.Fatalf("complete: %v %v", done, err)
	}
	ids := make([]int64, len(bj))
	for i, r := range bj {
		ids[i] = r.ID
	}
	if _, err := b.Pool.Exec(b.Ctx, `UPDATE `+b.Table("docket_jobs")+` SET lease_until = now() - interval '1 second' WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Q.Reap(b.Ctx, b.Pool, 100); err != nil {
		t.Fatal(err)
	}
	next := b.claimLimited(t, "noop_tenants", other, 100, true)
	if got := perTenant(next); got != "map[a:2 b:8]" || fmt.Sprint(next.Places) != "map[a:1 b:2]" {
		t.Fatalf("after a's jobs but one completed and b's were reaped, the other worker took %s with places %v, want a:2 b:8 with places a:1 b:2",
			got, next.Places)
	}
}

// A per-tenant concurrency limit shares a claim smaller than its free
// places among tenants in key order, before it gives any tenant jobs to
// wait for a place, and says it held jobs back while a tenant with ready
// jobs has no free place.
func TestClaimLimitedConcurrencyShortClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setLimit(t, admin.Limit{Name: "noop_tenants", Kind: "noop", PerTenant: true, MaxRunning: 2})
	for _, tenant := range []string{"a", "b", "c"} {
		b.EnqueueN(t, 5, enqueue.Opts{Tenant: tenant})
	}
	w := uuid.New()
	perTenant := func(c queue.LimitedClaim) string {
		per := map[string]int{}
		for _, j := range c.Jobs {
			per[j.Tenant]++
		}
		return fmt.Sprint(per)
	}
	first := b.claimLimited(t, "noop_tenants", w, 5, true)
	if got := perTenant(first); got != "map[a:2 b:2 c:1]" {
		t.Fatalf("a claim of 5 took %s per tenant, want a:2 b:2 c:1", got)
	}
	// Then c's last place, and the jobs to wait for places, in key order.
	next := b.claimLimited(t, "noop_tenants", w, 5, true)
	if got := perTenant(next); got != "map[a:3 c:1]" || !next.Held || next.Wait != 0 {
		t.Fatalf("the next claim took %s, held %v, wait %s: want c's last place, then a's 3 left, held",
			got, next.Held, next.Wait)
	}
	if fmt.Sprint(next.Places) != "map[a:2 b:2 c:2]" {
		t.Fatalf("the worker holds places %v, want 2 of each tenant", next.Places)
	}
}

// A rate limit grants its bucket's whole tokens, and says when the next
// is due.
func TestClaimLimitedRate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setLimit(t, admin.Limit{Name: "noop_rate", Kind: "noop", Rate: 10, Per: time.Second, Burst: 3})
	b.EnqueueN(t, 20, enqueue.Opts{})
	w := uuid.New()
	first := b.claimLimited(t, "noop_rate", w, 100, false)
	if len(first.Jobs) != 3 || !first.Held || first.Wait <= 0 || first.Wait > 100*time.Millisecond {
		t.Fatalf("first claim took %d jobs, held %v, wait %s: want the burst of 3 and a wait of at most 100ms",
			len(first.Jobs), first.Held, first.Wait)
	}
	time.Sleep(first.Wait + 150*time.Millisecond)
	next := b.claimLimited(t, "noop_rate", w, 100, false)
	if len(next.Jobs) < 1 || len(next.Jobs) > 3 {
		t.Fatalf("after %s the claim took %d jobs, want 1 to 3 at 10/s", first.Wait+150*time.Millisecond, len(next.Jobs))
	}
	// Budget or not, a claim never takes more than it asks for, nor
	// jobs of kinds it was not given.
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE state = 'running'`); n != len(first.Jobs)+len(next.Jobs) {
		t.Fatalf("%d jobs running, claims returned %d", n, len(first.Jobs)+len(next.Jobs))
	}
}

// A rate limit whose bucket ran dry says to ask again when its next token
// is due, not when many have accrued: at 1,000/s, in about a millisecond.
func TestClaimLimitedRateWaitsForOneToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setLimit(t, admin.Limit{Name: "noop_fast", Kind: "noop", Rate: 1000, Per: time.Second, Burst: 50})
	b.EnqueueN(t, 200, enqueue.Opts{})
	res := b.claimLimited(t, "noop_fast", uuid.New(), 200, false)
	if len(res.Jobs) < 50 || len(res.Jobs) > 60 || !res.Held {
		t.Fatalf("first claim took %d jobs, held %v: want the burst of 50 (and what accrued meanwhile), held", len(res.Jobs), res.Held)
	}
	if res.Wait <= 0 || res.Wait > 2*time.Millisecond {
		t.Fatalf("a dry 1,000/s bucket says to wait %s, want the next token's 1-2ms", res.Wait)
	}
}

// A rate limit asked again and again grants every token that accrued: a
// refill dates the bucket at the instant it counted the tokens up to, so
// no time between two readings of the clock goes unpaid, however often
// the bucket is charged. The burst is a second of tokens: a bucket full
// to its burst drops what accrues beyond it, rightly, and with a smaller
// one a pause between two claims on a loaded machine (under -race at a
// load of 9, 64 tokens short with a burst of 50 ms) would drop tokens
// this test does not count.
func TestClaimLimitedRateLosesNoTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const rate, burst = 2000, 2000
	b.setLimit(t, admin.Limit{Name: "noop_steady", Kind: "noop", Rate: rate, Per: time.Second, Burst: burst})
	b.EnqueueN(t, 2*rate+burst, enqueue.Opts{})
	w := uuid.New()
	granted := len(b.claimLimited(t, "noop_steady", w, 2*rate, false).Jobs)
	firstEnd := time.Now()
	var lastStart time.Time
	for time.Since(firstEnd) < time.Second {
		lastStart = time.Now()
		granted += len(b.claimLimited(t, "noop_steady", w, 2*rate, false).Jobs)
	}
	// The bucket was made during the first claim and last charged during
	// the last one: at least this much time was paid for.
	if least := burst + int(rate*lastStart.Sub(firstEnd).Seconds()) - 1; granted < least {
		t.Fatalf("claims back to back for %s granted %d jobs at %d/s, want at least %d",
			lastStart.Sub(firstEnd), granted, rate, least)
	}
}

// Limits are validated before anything is written, and one scope has one
// limit.
func TestSetLimitRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, l := range []admin.Limit{
		{Name: "", Kind: "noop", MaxRunning: 1},
		{Name: "both", Queue: "q", Kind: "noop", MaxRunning: 1},
		{Name: "none", Kind: "noop"},
		{Name: "per", Kind: "noop", Per: time.Second, MaxRunning: 1},
		{Name: "short", Kind: "noop", Rate: 5, Per: time.Microsecond},
		{Name: "neg", Kind: "noop", MaxRunning: -1},
		{Name: "bad name", Kind: "noop", MaxRunning: 1},
	} {
		if err := b.ops.Limits().Set(b.Ctx, b.Pool, l); err == nil {
			t.Errorf("SetLimit(%+v) accepted", l)
		}
	}
	b.setLimit(t, admin.Limit{Name: "one", Kind: "noop", MaxRunning: 1})
	if err := b.ops.Limits().Set(b.Ctx, b.Pool, admin.Limit{Name: "two", Kind: "noop", MaxRunning: 2}); err == nil {
		t.Error("a second limit on kind noop was accepted")
	}
	b.setLimit(t, admin.Limit{Name: "one", Queue: "default", Rate: 5, Per: time.Second})
	got, err := b.ops.Limits().List(b.Ctx, b.Pool)
	if err != nil || len(got) != 1 || got[0] != (admin.Limit{Name: "one", Queue: "default", Rate: 5, Per: time.Second, Burst: 5}) {
		t.Fatalf("limits %+v (%v), want the replaced limit with burst 5", got, err)
	}
}

// During an upgrade, workers of the version before places (which call
// 026's docket_claim_limited, without jobs_per_place, and run every job
// they claim at once) share a per-tenant cap with workers that hold
// places. Neither may push a tenant past its cap: the earlier claim is
// never given jobs to wait for a place, and counts the jobs a worker holds
// for its places as running; the claim with places counts every running
// job of an earlier worker.
func TestClaimLimitedBesideEarlierWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setLimit(t, admin.Limit{Name: "noop_tenants", Kind: "noop", PerTenant: true, MaxRunning: 2})
	b.EnqueueN(t, 20, enqueue.Opts{Tenant: "a"})
	earlierClaim := func(worker uuid.UUID) int {
		t.Helper()
		var n int
		if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM `+b.Table("docket_claim_limited")+
			`('noop_tenants', '{default}', '{noop}', 100, $1, 60000, '{}', '{}', '{}', '{}')`, worker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	earlier, later := uuid.New(), uuid.New()
	if n := earlierClaim(earlier); n != 2 {
		t.Fatalf("an earlier worker's claim took %d of the tenant's jobs, want its 2 places' worth and none to hold", n)
	}
	if c := b.claimLimited(t, "noop_tenants", later, 100, true); len(c.Jobs) != 0 {
		t.Fatalf("with an earlier worker running the tenant's 2 jobs, a worker with places took %d", len(c.Jobs))
	}
	// The earlier worker's jobs end; the worker with places holds the
	// tenant's places and jobs to wait for them.
	if _, err := b.Pool.Exec(b.Ctx, `DELETE FROM `+b.Table("docket_jobs")+` WHERE locked_by = $1`, earlier); err != nil {
		t.Fatal(err)
	}
	if c := b.claimLimited(t, "noop_tenants", later, 100, true); len(c.Jobs) != 8 || c.Places["a"] != 2 {
		t.Fatalf("a worker with places took %d jobs with places %v, want 8 with 2 places", len(c.Jobs), c.Places)
	}
	if n := earlierClaim(uuid.New()); n != 0 {
		t.Fatalf("an earlier worker's claim took %d jobs while another held the tenant's places", n)
	}
}

// A rate limit's claim may take the tokens due within Ahead (migration
// 029) and says when each is due: at 1,000/s with a burst of 10 and 50 ms
// ahead, the first claim takes the burst and about 50 more, the first 10
// due now and the others in order, none later than 50 ms after the claim
// returned (sooner by the claim's own time). The bucket is left owing
// them, so the next claim takes only what accrued meanwhile, and the
// claim asks again when a token beyond the horizon accrues.
func TestClaimLimitedRateAhead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const rate, burst, ahead = 1000, 10, 50 * time.Millisecond
	b.setLimit(t, admin.Limit{Name: "noop_ahead", Kind: "noop", Rate: rate, Per: time.Second, Burst: burst})
	b.EnqueueN(t, 500, enqueue.Opts{})
	w := uuid.New()
	claim := func() queue.LimitedClaim {
		t.Helper()
		res, err := b.Q.ClaimLimited(b.Ctx, b.Pool, queue.LimitedClaimParams{
			Limit: "noop_ahead", Worker: w, Queues: []string{"default"}, Kinds: []string{"noop"}, Max: 500,
			Lease: time.Minute, Ahead: ahead,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	began := time.Now()
	first := claim()
	if len(first.Jobs) < burst+50 || len(first.Jobs) > burst+60 || len(first.Due) != len(first.Jobs) {
		t.Fatalf("first claim took %d jobs with %d due times: want the burst of %d and about 50 ahead, each with its time",
			len(first.Jobs), len(first.Due), burst)
	}
	for i, d := range first.Due {
		switch {
		case i < burst && d != 0:
			t.Fatalf("job %d of the burst is due in %s, want now", i, d)
		case d > ahead:
			t.Fatalf("job %d is due in %s, beyond the %s asked for", i, d, ahead)
		case i > 0 && d < first.Due[i-1]:
			t.Fatalf("job %d is due in %s, before job %d (%s)", i, d, i-1, first.Due[i-1])
		}
	}
	if last := first.Due[len(first.Due)-1]; last <= 0 {
		t.Fatalf("the last job is due in %s, want ahead", last)
	}
	if !first.Held || first.Wait <= 0 || first.Wait > 2*time.Millisecond {
		t.Fatalf("held %v, wait %s: want held, and the next token beyond the horizon in 1-2ms", first.Held, first.Wait)
	}
	next := claim()
	// No more than the burst, the tokens that accrued over both claims,
	// and those within the horizon after them (and a fraction of one).
	if most := burst + 1 + int(rate*(time.Since(began)+ahead).Seconds()); len(first.Jobs)+len(next.Jobs) > most {
		t.Fatalf("two claims within %s took %d jobs, the bucket allows %d", time.Since(began), len(first.Jobs)+len(next.Jobs), most)
	}
	for i, d := range next.Due {
		if d > ahead {
			t.Fatalf("the second claim's job %d is due in %s, beyond the %s asked for", i, d, ahead)
		}
	}
}

// claimAhead runs the claim of migration 029 for limit on the queue's jobs
// of priority 0, taking up to max tokens' worth ahead_ms ahead, and
// returns when each job it took spends its token by the database's clock:
// when the claim read the bucket, or when its token is due, for a job
// taken ahead.
func (b *bundle) claimAhead(t *testing.T, limit string, worker uuid.UUID, max, aheadMS int) []time.Time {
	t.Helper()
	tx, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(b.Ctx) }()
	var n int
	if err := tx.QueryRow(b.Ctx, `SELECT count(*) FROM `+b.Table("docket_claim_limited")+
		`($1, '{default}', '{noop}', $2, $3, 60000, '{default}', '{0}', '{0}', '{9223372036854775807}', 4, $4)`,
		limit, max, worker, aheadMS).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return nil
	}
	// The bucket is dated at the instant the claim counted its tokens up
	// to (its "at").
	var report string
	var at time.Time
	if err := tx.QueryRow(b.Ctx, `SELECT current_setting('docket.limit_ahead', true), (SELECT refilled_at FROM `+
		b.Table("docket_limit_buckets")+` WHERE name = $1)`, limit).Scan(&report, &at); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.Ctx); err != nil {
		t.Fatal(err)
	}
	var a struct {
		TokenMS float64               `json:"token_ms"`
		Keys    map[string][2]float64 `json:"keys"`
	}
	if err := json.Unmarshal([]byte(report), &a); err != nil || len(a.Keys) != 1 {
		t.Fatalf("a claim of %d jobs reported %q (%v)", n, report, err)
	}
	k := a.Keys[""]
	spent := make([]time.Time, n)
	for j := range spent {
		spent[j] = at.Add(time.Duration(math.Max(0, float64(j+1)-k[0]) * a.TokenMS * float64(time.Millisecond)))
	}
	return spent
}

// Claims that take tokens ahead spend no more of them over any stretch of
// time than the bucket allows, two workers claiming at once, when each job
// taken ahead spends its token when it is due (a worker starts it no
// earlier); spent when claimed, the tokens would exceed the bucket by
// about what was taken ahead.
func TestClaimLimitedRateAheadKeepsTheBucket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const rate, burst, aheadMS = 400, 5, 40
	b.setLimit(t, admin.Limit{Name: "noop_window", Kind: "noop", Rate: rate, Per: time.Second, Burst: burst})
	b.EnqueueN(t, 2*rate, enqueue.Opts{})
	var mu sync.Mutex
	var spent, claimed []time.Time
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := uuid.New()
			for end := time.Now().Add(time.Second); time.Now().Before(end) && !t.Failed(); {
				s := b.claimAhead(t, "noop_window", w, 100, aheadMS)
				mu.Lock()
				spent = append(spent, s...)
				for range s {
					claimed = append(claimed, s[0])
				}
				mu.Unlock()
				time.Sleep(3 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	// The most by which a stretch of spends exceeds the bucket's tokens
	// and burst (and one for its fraction of a token).
	excess := func(ts []time.Time) (most int, over time.Duration) {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := range ts {
			for j := i + 1; j < len(ts); j++ {
				if e := j - i + 1 - burst - 1 - int(rate*ts[j].Sub(ts[i]).Seconds()); e > most {
					most, over = e, ts[j].Sub(ts[i])
				}
			}
		}
		return most, over
	}
	if len(spent) < rate/2 {
		t.Fatalf("two workers claiming for a second took %d jobs at %d/s", len(spent), rate)
	}
	if n, over := excess(spent); n > 0 {
		t.Fatalf("%d tokens more than the bucket holds were spent within %s", n, over)
	}
	if n, _ := excess(claimed); n < rate*aheadMS/1000/2 {
		t.Fatalf("spent when claimed, the tokens would exceed the bucket by %d, want about %d: did the claims take any ahead?",
			n, rate*aheadMS/1000)
	}
}

// A bucket that claims ahead left owing tokens grants nothing to the
// claims of earlier versions, which take nothing ahead, until the debt is
// repaid: 026's claim (workers from before 027) and 027's, which
// migration 029 calls with ahead_ms 0. Before 029 guarded it, 026's
// claim read the debt as a negative budget and paid it off.
func TestClaimLimitedAheadBesideEarlierWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setLimit(t, admin.Limit{Name: "noop_debt", Kind: "noop", Rate: 100, Per: time.Second, Burst: 1})
	b.EnqueueN(t, 50, enqueue.Opts{})
	if s := b.claimAhead(t, "noop_debt", uuid.New(), 50, 500); len(s) < 40 {
		t.Fatalf("a claim 500 ms ahead at 100/s took %d jobs, want about 50", len(s))
	}
	tokens := func() float64 {
		t.Helper()
		var v float64
		if err := b.Pool.QueryRow(b.Ctx, `SELECT tokens FROM `+b.Table("docket_limit_buckets")+
			` WHERE name = 'noop_debt'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if debt := tokens(); debt > -40 {
		t.Fatalf("the bucket holds %.1f tokens after the claim ahead, want a debt of about 50", debt)
	}
	b.EnqueueN(t, 50, enqueue.Opts{})
	for _, call := range []string{
		`('noop_debt', '{default}', '{noop}', 50, $1, 60000, '{default}', '{0}', '{0}', '{9223372036854775807}')`,
		`('noop_debt', '{default}', '{noop}', 50, $1, 60000, '{default}', '{0}', '{0}', '{9223372036854775807}', 4)`,
	} {
		var n int
		if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM `+b.Table("docket_claim_limited")+call, uuid.New()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if debt := tokens(); n != 0 || debt > -30 {
			t.Fatalf("an earlier worker's claim took %d jobs and left %.1f tokens, want none taken and the debt", n, debt)
		}
	}
}
