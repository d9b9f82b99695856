package relay

import (
	"math/rand/v2"
	"time"
)

// nextBackoff doubles prev within [lo, hi].
func nextBackoff(prev, lo, hi time.Duration) time.Duration {
	if prev < lo {
		return lo
	}
	if prev >= hi/2 {
		return hi
	}
	return prev * 2
}

// jitter returns a random duration in [d/2, d], so that relays backing off
// from the same outage do not return all at once.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
