package relay_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
)

// refusals records when a Publisher refused each message, by id.
type refusals struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (r *refusals) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string][]time.Time{}
	}
	r.at[id] = append(r.at[id], time.Now())
}

func (r *refusals) of(id string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at[id])
}

// TestRefusedEventWaitsForItsNextAttempt: a broker that refuses a topic
// "permanently" for a while (a RabbitMQ node recovering its bindings after
// a restart) does not make its events dead letters within milliseconds.
// Each refused event waits RefusalBackoff, then four times as long, before
// its next attempt, and its key's later events wait with it while the
// other keys flow; once the broker accepts the topic again, the key is
// published in order. An event the broker keeps refusing becomes a dead
// letter after MaxAttempts refusals spread over those waits.
func TestRefusedEventWaitsForItsNextAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const backoff = 150 * time.Millisecond
	var (
		mu         sync.Mutex
		recovering = true // the broker refuses topic "flaky" while true
	)
	refused := &refusals{}
	s := &sink{}
	s.setRefuse(func(m relay.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if (m.Topic == "flaky" && recovering) || m.Topic == "gone" {
			refused.add(m.ID)
			return relay.Permanent(errors.New("returned unroutable: 312 NO_ROUTE"))
		}
		return nil
	})
	r := b.start(t, relay.Config{Publisher: s, MaxAttempts: 3, RefusalBackoff: backoff, LeaseTTL: time.Second})
	flaky := b.publishOne(t, outbox.Message{Topic: "flaky", Key: "k1"})
	after := b.publishOne(t, outbox.Message{Topic: "ok", Key: "k1"})
	other := b.publishOne(t, outbox.Message{Topic: "ok", Key: "k2"})
	gone := b.publishOne(t, outbox.Message{Topic: "gone", Key: "k3"})

	waitFor(t, 10*time.Second, "the second refusal of the flaky event", func() bool { return len(refused.of(flaky)) >= 2 })
	// The third attempt is due 4 × backoff after the second refusal: the
	// broker recovers well before it.
	mu.Lock()
	recovering = false
	mu.Unlock()
	if got := ids(s.messages()); !slices.Contains(got, other) || slices.Contains(got, after) {
		t.Fatalf("delivered %v while the flaky event waited: want %s (another key) and not %s (its key's next)", got, other, after)
	}
	at := refused.of(flaky)
	if len(at) != 2 {
		t.Fatalf("the flaky event was refused %d times before the broker recovered, want 2", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < backoff {
		t.Fatalf("second attempt %s after the first refusal, want at least %s", gap, backoff)
	}

	waitFor(t, 10*time.Second, "the gone event dead-lettered", func() bool { return r.Stats().DeadLettered == 1 })
	at = refused.of(gone)
	if len(at) != 3 {
		t.Fatalf("the gone event was refused %d times, want 3 (MaxAttempts)", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < backoff {
		t.Fatalf("gone: second attempt %s after the first refusal, want at least %s", gap, backoff)
	}
	if gap := at[2].Sub(at[1]); gap < 4*backoff {
		t.Fatalf("gone: third attempt %s after the second refusal, want at least %s", gap, 4*backoff)
	}

	waitFor(t, 10*time.Second, "the flaky key published", func() bool { return len(s.messages()) == 3 })
	got := ids(s.messages())
	if i, j := slices.Index(got, flaky), slices.Index(got, after); i < 0 || j < i {
		t.Fatalf("delivered %v, want %s then %s (key k1 in order)", got, flaky, after)
	}
	dead, err := b.client.ListDeadEvents(b.ctx, b.pool, "", 0)
	if err != nil || len(dead) != 1 || dead[0].Topic != "gone" || dead[0].Attempts != 3 {
		t.Fatalf("dead letters %+v (%v), want only the gone event, after 3 attempts", dead, err)
	}
}

// TestRefusalHoldDefaults: with the defaults a refused event waits 2 s,
// then 8 s, so its third refusal (MaxAttempts) comes at least 10 s after
// the first; the wait stops growing at a minute.
func TestRefusalHoldDefaults(t *testing.T) {
	r, err := relay.New(nil, relay.Config{Publisher: &sink{}, DisableNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := relay.MaxAttempts(r); n != 3 {
		t.Fatalf("default MaxAttempts %d, want 3", n)
	}
	for attempts, want := range map[int]time.Duration{1: 2 * time.Second, 2: 8 * time.Second, 3: 32 * time.Second, 4: time.Minute, 9: time.Minute} {
		if got := relay.RefusalHold(r, attempts); got != want {
			t.Errorf("hold after refusal %d: %s, want %s", attempts, got, want)
		}
	}
	if sum := relay.RefusalHold(r, 1) + relay.RefusalHold(r, 2); sum < 10*time.Second {
		t.Errorf("the third refusal can come %s after the first, want at least 10s", sum)
	}
}
