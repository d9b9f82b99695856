package core

import (
	"testing"
	"time"
)

func TestBackoffCappedAndJittered(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt <= 20; attempt++ {
		step := time.Second << (attempt - 1)
		if step > time.Hour || step <= 0 {
			step = time.Hour
		}
		const n = 2000
		var sum time.Duration
		distinct := map[time.Duration]bool{}
		for range n {
			d := Backoff(attempt)
			if d < step/2 || d > step {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, step/2, step)
			}
			sum += d
			distinct[d] = true
		}
		mean := sum / n
		// Uniform on [step/2, step]: mean 3/4 step, within 3% for 2000 samples.
		want := step * 3 / 4
		if diff := mean - want; diff > step*3/100 || diff < -step*3/100 {
			t.Errorf("attempt %d: mean %v, want about %v", attempt, mean, want)
		}
		if len(distinct) < n/2 {
			t.Errorf("attempt %d: only %d distinct delays in %d samples: not jittered", attempt, len(distinct), n)
		}
	}
	if d := Backoff(1000); d > time.Hour {
		t.Fatalf("attempt 1000: %v over the cap", d)
	}
}
