package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/outbox/relay"
)

// TestIDConfig: New refuses an ID it could not hold or store, and a relay
// without a connection of its own holds no ID.
func TestIDConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		cfg  relay.Config
		want string
	}{
		{relay.Config{ID: strings.Repeat("r", relay.MaxIDLen+1)}, "longer than"},
		{relay.Config{ID: "a\nb"}, "control character"},
		{relay.Config{ID: "a\xffb"}, "UTF-8"},
		{relay.Config{ID: "x", DisableNotify: true}, "set ListenURL"},
	} {
		c.cfg.Schema, c.cfg.Publisher = b.schema, &sink{}
		if _, err := relay.New(b.pool, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ID %q: %v, want an error saying %q", c.cfg.ID, err, c.want)
		}
	}
	r := b.start(t, relay.Config{Publisher: &sink{}, DisableNotify: true})
	host, _ := os.Hostname()
	if want := host + ":" + strconv.Itoa(os.Getpid()); r.ID() != want {
		t.Errorf("a relay without a connection of its own: ID %q, want %q", r.ID(), want)
	}
}

// TestDefaultIDs: relays without an ID take the first free of
// hostname/schema/1, /2, ...: a relay started after one stopped takes its
// place. A 5 s lease: on a 1 s lease the sessions are checked every 50 ms,
// each check bounded by 50 ms, and on a loaded machine a slow check ends
// the second relay's hold, which then takes the first free ID again.
func TestDefaultIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	host, _ := os.Hostname()
	slot := func(n int) string { return host + "/" + b.schema + "/" + strconv.Itoa(n) }
	first := b.start(t, relay.Config{Publisher: &sink{}, LeaseTTL: 5 * time.Second})
	waitFor(t, 10*time.Second, "the first relay's id", func() bool { return first.ID() != "" })
	second := b.start(t, relay.Config{Publisher: &sink{}, LeaseTTL: 5 * time.Second})
	waitFor(t, 10*time.Second, "the second relay's id", func() bool { return second.ID() != "" })
	if first.ID() != slot(1) || second.ID() != slot(2) {
		t.Fatalf("ids %q and %q, want %q and %q", first.ID(), second.ID(), slot(1), slot(2))
	}
	stopCtx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := first.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	third := b.start(t, relay.Config{Publisher: &sink{}, LeaseTTL: 5 * time.Second})
	waitFor(t, 10*time.Second, "the third relay's id", func() bool { return third.ID() != "" })
	if third.ID() != slot(1) {
		t.Fatalf("after the first stopped, a new relay took %q, want %q", third.ID(), slot(1))
	}
}

// TestSameIDWaits: a second relay with the ID of a live one says so and
// publishes nothing while the first does; when the first stops, the second
// takes over every partition and publishes the rest, each key in order.
// A 5 s lease, as in TestDefaultIDs.
func TestSameIDWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, second := &sink{}, &sink{}
	a := b.start(t, relay.Config{ID: "orders", Publisher: first, LeaseTTL: 5 * time.Second})
	waitFor(t, 10*time.Second, "the first relay's partitions", func() bool { return a.Stats().Parts == 64 })
	var logs logBuffer
	c := b.start(t, relay.Config{ID: "orders", Publisher: second, LeaseTTL: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waitFor(t, 10*time.Second, "the second relay's warning", func() bool {
		return strings.Contains(logs.String(), "relay id held by another live relay; waiting until it stops")
	})
	want := map[string]bool{}
	for i := range 30 {
		want[b.publishOne(t, outbox.Message{Topic: "t", Key: "k" + strconv.Itoa(i%3)})] = true
	}
	waitFor(t, 10*time.Second, "the first relay's deliveries", func() bool { return len(first.messages()) == 30 })
	if n, parts := len(second.messages()), c.Stats().Parts; n != 0 || parts != 0 {
		t.Fatalf("the waiting relay published %d messages and holds %d partitions", n, parts)
	}
	stopCtx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		want[b.publishOne(t, outbox.Message{Topic: "t", Key: "k" + strconv.Itoa(i%3)})] = true
	}
	waitFor(t, 10*time.Second, "the second relay's deliveries", func() bool { return len(second.messages()) == 30 })
	if c.Stats().Parts != 64 {
		t.Errorf("the second relay holds %d partitions, want 64", c.Stats().Parts)
	}
	checkOrder(t, append(first.messages(), second.messages()...), want)
}

// TestLostSessionStopsPublishing: a relay whose session holding its ID
// ends (here pg_terminate_backend; a failover or a cut connection alike)
// while it publishes stops publishing, and the relay waiting with the same
// ID takes the ID and the partitions at once but publishes only once the
// first must have stopped: no call of one relay's Publisher overlaps a call
// of the other's, and every event is delivered, each key in order.
func TestLostSessionStopsPublishing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const id = "fenced"
	first, second := &timedSink{delay: 20 * time.Millisecond}, &timedSink{delay: 20 * time.Millisecond}
	a := b.start(t, relay.Config{ID: id, Publisher: first, LeaseTTL: 5 * time.Second, BatchSize: 20})
	waitFor(t, 10*time.Second, "the first relay's partitions", func() bool { return a.Stats().Parts == 64 })
	c := b.start(t, relay.Config{ID: id, Publisher: second, LeaseTTL: 5 * time.Second, BatchSize: 20})

	// Producers keep the first relay publishing throughout.
	var mu sync.Mutex
	want := map[string]bool{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				pub, err := b.client.Publish(b.ctx, b.pool, outbox.Message{Topic: "t", Key: fmt.Sprintf("k%d-%d", p, i%5)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[strconv.FormatInt(pub.ID, 10)] = true
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	waitFor(t, 10*time.Second, "the second relay waiting for the id", func() bool {
		var n int
		err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND wait_event = 'advisory'`,
			"docket relay "+id+" (waiting)").Scan(&n)
		return err == nil && n == 1
	})
	waitFor(t, 30*time.Second, "the first relay publishing", func() bool { return len(first.messages()) > 100 })

	var killed int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, "docket relay "+id).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d sessions (%v), want the first relay's one", killed, err)
	}
	cut := time.Now()
	waitFor(t, 30*time.Second, "the second relay publishing", func() bool { return len(second.messages()) > 100 })
	stop.Store(true)
	wg.Wait()
	waitFor(t, 20*time.Second, "every event delivered", func() bool {
		st, err := b.client.EventStatus(b.ctx, b.pool)
		return err == nil && st.Pending == 0
	})
	if a.Stats().Parts != 0 || c.Stats().Parts != 64 {
		t.Errorf("partitions: %d held by the first relay, %d by the second; want 0 and 64", a.Stats().Parts, c.Stats().Parts)
	}
	firstCalls, secondCalls := first.intervals(), second.intervals()
	for _, x := range firstCalls {
		for _, y := range secondCalls {
			if x.start.Before(y.end) && y.start.Before(x.end) {
				t.Fatalf("the two relays published at once: %s-%s and %s-%s after the cut",
					x.start.Sub(cut), x.end.Sub(cut), y.start.Sub(cut), y.end.Sub(cut))
			}
		}
	}
	t.Logf("the first relay's last call ended %s after the cut, the second's first began %s after it",
		firstCalls[len(firstCalls)-1].end.Sub(cut), secondCalls[0].start.Sub(cut))
	mu.Lock()
	defer mu.Unlock()
	checkOrder(t, append(first.messages(), second.messages()...), want)
}

// timedSink is a sink whose every Publish call takes delay (or until ctx
// ends, when it acknowledges nothing), and which records when each call
// ran.
type timedSink struct {
	sink
	delay   time.Duration
	callsMu sync.Mutex
	calls   []interval
}

type interval struct{ start, end time.Time }

func (s *timedSink) Publish(ctx context.Context, msgs []relay.Message) []error {
	start := time.Now()
	defer func() {
		s.callsMu.Lock()
		s.calls = append(s.calls, interval{start, time.Now()})
		s.callsMu.Unlock()
	}()
	select {
	case <-time.After(s.delay):
		return s.sink.Publish(ctx, msgs)
	case <-ctx.Done():
		errs := make([]error, len(msgs))
		for i := range errs {
			errs[i] = ctx.Err()
		}
		return errs
	}
}

func (s *timedSink) intervals() []interval {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	return append([]interval(nil), s.calls...)
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.String()
}
