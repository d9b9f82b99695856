package bench

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile of sorted, which must be in
// ascending order, by the nearest-rank method: the smallest sample such
// that at least p percent of the samples are less than or equal to it. It
// is always one of the samples, never an interpolation. p is clamped to
// [0, 100]; p = 0 gives the minimum and p = 100 the maximum. An empty slice
// gives 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// Summarize sorts samples in place and returns their 50th, 95th and 99th
// percentiles (see [Percentile]) and maximum. No samples give the zero
// Latency.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	return Latency{
		P50: Percentile(samples, 50),
		P95: Percentile(samples, 95),
		P99: Percentile(samples, 99),
		Max: samples[len(samples)-1],
	}
}
