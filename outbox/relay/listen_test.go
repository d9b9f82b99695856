package relay_test

import (
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
)

// An idle relay is woken by the publishers' announcement, not its poll:
// with a poll of a minute, events published one at a time, in bursts
// whose later events fall inside the publisher's debounce window, and by
// COPY all arrive within seconds. With notifications off, the same relay
// delivers nothing before its poll.
func TestNotifyWakesIdleRelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := &sink{}
	r := b.start(t, relay.Config{Publisher: s, PollInterval: time.Minute})
	waitFor(t, 10*time.Second, "the relay to hold its partitions", func() bool { return r.Stats().Parts == 64 })
	time.Sleep(50 * time.Millisecond) // past its first rounds: idle now

	b.publishOne(t, outbox.Message{Topic: "t", Key: "k"})
	waitFor(t, 5*time.Second, "the announced event", func() bool { return len(s.messages()) == 1 })
	// A burst: only the first is announced, the rest fall in the window.
	for range 5 {
		b.publishOne(t, outbox.Message{Topic: "t", Key: "k"})
	}
	waitFor(t, 5*time.Second, "the burst", func() bool { return len(s.messages()) == 6 })
	time.Sleep(50 * time.Millisecond)
	if _, err := b.client.PublishMany(b.ctx, b.pool, []outbox.Message{{Topic: "t"}, {Topic: "t", Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the COPY batch", func() bool { return len(s.messages()) == 8 })

	quiet := setup(t)
	qs := &sink{}
	qr := quiet.start(t, relay.Config{Publisher: qs, PollInterval: time.Minute, DisableNotify: true})
	waitFor(t, 10*time.Second, "the polling relay to hold its partitions", func() bool { return qr.Stats().Parts == 64 })
	time.Sleep(500 * time.Millisecond) // past its first round, even on a loaded machine
	quiet.publishOne(t, outbox.Message{Topic: "t", Key: "k"})
	time.Sleep(time.Second)
	if n := len(qs.messages()); n != 0 {
		t.Errorf("a relay with notifications off delivered %d events before its poll", n)
	}
}

// A poll longer than the lease period does not let the lease lapse: the
// relay renews in time however long it would idle.
func TestLongPollKeepsLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, relay.Config{Publisher: &sink{}, PollInterval: time.Minute, DisableNotify: true, LeaseTTL: 600 * time.Millisecond})
	waitFor(t, 10*time.Second, "the relay to hold its partitions", func() bool { return r.Stats().Parts == 64 })
	time.Sleep(2 * time.Second) // more than three lease periods
	var held int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM "`+b.schema+`".docket_relay_parts WHERE lease_until > now()`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	st, err := b.client.EventStatus(b.ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	if held != 64 || st.Relays != 1 {
		t.Errorf("after three lease periods idle: %d partitions under a live lease and %d live relays, want 64 and 1", held, st.Relays)
	}
}
