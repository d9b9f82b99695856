package core

import (
	"math/rand/v2"
	"time"
)

// Backoff is the default retry delay after the given failed attempt (1 for
// the first): capped exponential with jitter. The un-jittered delay is
// 1s·2^(attempt-1), capped at 1 hour; the result is drawn uniformly from
// [d/2, d], so retries of jobs that failed together spread out instead of
// returning in lockstep, while each still waits at least half its step.
func Backoff(attempt int) time.Duration {
	return backoff(attempt, time.Second, time.Hour, rand.Int64N)
}

func backoff(attempt int, base, ceiling time.Duration, randN func(int64) int64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := ceiling
	if attempt <= 62 {
		if step := base << (attempt - 1); step > 0 && step < ceiling {
			d = step
		}
	}
	half := d / 2
	return half + time.Duration(randN(int64(d-half)+1))
}
