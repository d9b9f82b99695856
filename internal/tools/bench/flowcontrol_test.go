package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestIsLimitedSpreadsTheShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n     int
		share float64
		want  int
	}{{100_000, 0.1, 10_000}, {5000, 0.2, 1000}, {10, 1, 10}, {10, 0, 0}, {7, 0.5, 3}} {
		got, run, longest := 0, 0, 0
		for k := range c.n {
			if isLimited(k, c.share) {
				got++
				run = 0
			} else if run++; run > longest {
				longest = run
			}
		}
		if got != c.want {
			t.Errorf("%d jobs at share %v: %d limited, want %d", c.n, c.share, got, c.want)
		}
		if c.share > 0 && float64(longest) > 1/c.share {
			t.Errorf("%d jobs at share %v: %d ordinary jobs in a row", c.n, c.share, longest)
		}
	}
}

// The tracer tells the two claims apart by their statements and takes
// the jobs from the claim's command tag; other batches pass untimed.
func TestClaimTracerSplitsClaims(t *testing.T) {
	t.Parallel()
	type seen struct {
		limited bool
		jobs    int
	}
	var got []seen
	tr := &claimTracer{claimed: func(limited bool, took time.Duration, jobs int) {
		if took < 0 {
			t.Errorf("negative duration %s", took)
		}
		got = append(got, seen{limited, jobs})
	}}
	batch := func(tag string, sqls ...string) {
		b := &pgx.Batch{}
		for _, s := range sqls {
			b.Queue(s)
		}
		ctx := tr.TraceBatchStart(context.Background(), nil, pgx.TraceBatchStartData{Batch: b})
		for _, s := range sqls {
			tr.TraceBatchQuery(ctx, nil, pgx.TraceBatchQueryData{SQL: s, CommandTag: pgconn.NewCommandTag(tag)})
		}
		tr.TraceBatchEnd(ctx, nil, pgx.TraceBatchEndData{})
	}
	batch("SELECT 7", "SELECT set_config('enable_seqscan', 'off', true)",
		"WITH c AS (SELECT 1) UPDATE s.docket_jobs SET state = 'running', attempts = attempts + 1")
	batch("SELECT 3", "SELECT set_config('enable_seqscan', 'off', true)",
		`SELECT id FROM "s".docket_claim_limited($1, $2::text[], $3::text[], $4, $5, $6)`,
		"SELECT current_setting('docket.limit_wait_ms', true)")
	batch("UPDATE 5", "UPDATE s.docket_jobs SET lease_until = now()")
	want := []seen{{false, 7}, {true, 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("claims %v, want %v", got, want)
	}
}

// The pickup of a rate-limited job is its start less its token's due
// time, with the bucket's start fitted so that no job started early.
func TestRateLimitedPickup(t *testing.T) {
	t.Parallel()
	const rate, burst = 100, 10
	sec := int64(time.Second)
	var starts []int64
	for i := range 300 {
		at := int64(i) * sec / 1000 // the burst, a millisecond apart
		if i >= burst {
			// Job i's token is due at 5s + (i+1-burst)*10ms; the jobs
			// start 2ms after it, every tenth 10ms after.
			at = 5*sec + int64(i+1-burst)*sec/rate + 2*int64(time.Millisecond)
			if i%10 == 0 {
				at += 8 * int64(time.Millisecond)
			}
		}
		starts = append(starts, at)
	}
	got := rateLimitedPickup(starts, rate, burst)
	if got.P50 != 0 || got.P99 != 8*time.Millisecond || got.Max != 8*time.Millisecond {
		t.Errorf("pickup %+v, want p50 0 (the fastest counts 0) and p99 8ms", got)
	}
	if got := rateLimitedPickup(starts[:burst], rate, burst); got != (Latency{}) {
		t.Errorf("pickup of the burst alone %+v, want none", got)
	}
}
