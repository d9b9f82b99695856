package relay

import (
	"context"
	"testing"
	"time"
)

type nopPublisher struct{}

func (nopPublisher) Publish(_ context.Context, msgs []Message) []error {
	return make([]error, len(msgs))
}
func (nopPublisher) Close() error { return nil }

// TestRefusalHoldDefaults: with the defaults a refused event waits 2 s,
// then 8 s, so its third refusal (MaxAttempts) comes at least 10 s after
// the first; the wait stops growing at a minute.
func TestRefusalHoldDefaults(t *testing.T) {
	r, err := New(nil, Config{Publisher: nopPublisher{}, DisableNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.MaxAttempts != 3 || r.cfg.RefusalBackoff != 2*time.Second {
		t.Fatalf("defaults MaxAttempts %d, RefusalBackoff %s; want 3 and 2s", r.cfg.MaxAttempts, r.cfg.RefusalBackoff)
	}
	for attempts, want := range map[int]time.Duration{1: 2 * time.Second, 2: 8 * time.Second, 3: 32 * time.Second, 4: time.Minute, 9: time.Minute} {
		if got := r.refusalHold(attempts); got != want {
			t.Errorf("hold after refusal %d: %s, want %s", attempts, got, want)
		}
	}
	if sum := r.refusalHold(1) + r.refusalHold(2); sum < 10*time.Second {
		t.Errorf("the third refusal can come %s after the first, want at least 10s", sum)
	}
}
