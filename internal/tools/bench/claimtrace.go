package bench

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The worker sends each claim as one batch (its settings, the claim, and
// for a limited claim the wait hint); these substrings of the claim
// statement tell the two kinds of claim apart. worker.Config.OnClaim
// reports both alike.
const (
	limitedClaimMark  = "docket_claim_limited("
	ordinaryClaimMark = "SET state = 'running'"
)

// claimTracer times the worker's claim batches on its connections and
// calls claimed with each one's duration, from the batch being sent to its
// results being read, whether it was a limited claim, and the jobs it took.
// Every other statement passes untimed.
type claimTracer struct {
	claimed func(limited bool, took time.Duration, jobs int)
}

type claimTraceKey struct{}

// claimTrace is what a claim batch carries from its start to its end.
type claimTrace struct {
	start   time.Time
	limited bool
	jobs    int
}

func (t *claimTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (t *claimTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *claimTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	for _, q := range data.Batch.QueuedQueries {
		limited := strings.Contains(q.SQL, limitedClaimMark)
		if limited || strings.Contains(q.SQL, ordinaryClaimMark) {
			return context.WithValue(ctx, claimTraceKey{}, &claimTrace{start: time.Now(), limited: limited})
		}
	}
	return ctx
}

func (t *claimTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c, ok := ctx.Value(claimTraceKey{}).(*claimTrace)
	if ok && data.Err == nil && (strings.Contains(data.SQL, limitedClaimMark) || strings.Contains(data.SQL, ordinaryClaimMark)) {
		c.jobs = int(data.CommandTag.RowsAffected())
	}
}

func (t *claimTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	c, ok := ctx.Value(claimTraceKey{}).(*claimTrace)
	if ok && data.Err == nil {
		t.claimed(c.limited, time.Since(c.start), c.jobs)
	}
}

// claimStats collects the claims of one kind (limited or ordinary).
type claimStats struct {
	took []time.Duration
	jobs int
}

func (s *claimStats) add(took time.Duration, jobs int) {
	s.took = append(s.took, took)
	s.jobs += jobs
}

// summary gives the claim count, the mean jobs per claim, and the
// 50th and 99th percentiles of the claims' durations; it sorts s.took.
func (s *claimStats) summary() ClaimSummary {
	l := Summarize(s.took)
	out := ClaimSummary{Claims: len(s.took), P50: l.P50, P99: l.P99}
	if len(s.took) > 0 {
		out.JobsPerClaim = float64(s.jobs) / float64(len(s.took))
	}
	return out
}

// ClaimSummary describes one kind of claim statement (limited or
// ordinary) over a run or a window. Its zero value is no claims.
type ClaimSummary struct {
	// Claims is how many claim statements ran; JobsPerClaim is the mean
	// number of jobs each took.
	Claims       int
	JobsPerClaim float64
	// P50 and P99 are percentiles of the claims' round trips, from the
	// batch being sent to its results being read.
	P50, P99 time.Duration
}

// fields adds s under the prefix ("limited" or "ordinary").
func (s ClaimSummary) fields(f []field, prefix string) []field {
	return append(f, field{prefix + "_claims", s.Claims}, field{prefix + "_jobs_per_claim", round(s.JobsPerClaim, 1)},
		field{prefix + "_claim_p50_ms", ms(s.P50)}, field{prefix + "_claim_p99_ms", ms(s.P99)})
}
