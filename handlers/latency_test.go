package handlers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
)

// pickup measures, n times, the time from an enqueue's commit to its
// handler starting on an idle worker.
func pickup(t *testing.T, e *env, started <-chan time.Time, n int) (p50, worst time.Duration) {
	t.Helper()
	var lat []time.Duration
	for range n {
		time.Sleep(5 * time.Millisecond) // let the worker go idle, past the notify debounce
		sent := time.Now()
		e.enqueue(testArgs{}, outbox.Opts{})
		select {
		case at := <-started:
			lat = append(lat, at.Sub(sent))
		case <-time.After(10 * time.Second):
			t.Fatal("job not picked up in 10s")
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)-1]
}

func startRecorder(e *env, cfg Config) (<-chan time.Time, *Worker) {
	started := make(chan time.Time, 100)
	reg := NewRegistry()
	MustRegister(reg, func(ctx context.Context, j *Job[testArgs]) error {
		started <- time.Now()
		return nil
	}, KindOpts{})
	return started, e.worker(reg, cfg)
}

func TestIdlePickupLatency(t *testing.T) {
	t.Parallel()
	t.Run("notify", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 8)
		// A poll interval of 5s: only a notification explains a quick pickup.
		started, _ := startRecorder(e, Config{PollInterval: 5 * time.Second})
		p50, worst := pickup(t, e, started, 20)
		t.Logf("idle pickup with NOTIFY: p50 %s, max %s", p50, worst)
		if p50 > 50*time.Millisecond || worst > time.Second {
			t.Errorf("pickup with NOTIFY p50 %s max %s: want a few milliseconds", p50, worst)
		}
	})
	t.Run("poll", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 8)
		const poll = 200 * time.Millisecond
		started, _ := startRecorder(e, Config{PollInterval: poll, DisableNotify: true})
		p50, worst := pickup(t, e, started, 10)
		t.Logf("idle pickup by polling every %s: p50 %s, max %s", poll, p50, worst)
		// The slack covers a loaded machine (CI shares two cores with the
		// database); a stalled poll loop would miss by whole intervals.
		if worst > poll+700*time.Millisecond {
			t.Errorf("pickup by polling took up to %s, want within the %s poll interval", worst, poll)
		}
	})
}

// The listener reconnects by itself when its connection is killed; until
// then the pools poll.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	started, _ := startRecorder(e, Config{PollInterval: 5 * time.Second})
	listeners := func() int {
		return e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
			`LISTEN "`+e.ob.NotifyChannel()+`"`)
	}
	waitFor(t, 5*time.Second, "a LISTEN connection", func() bool { return listeners() == 1 })
	e.exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
		`LISTEN "`+e.ob.NotifyChannel()+`"`)
	waitFor(t, 5*time.Second, "the listener to reconnect", func() bool {
		return listeners() == 1 && e.logs.contains("LISTEN connection is back")
	})
	p50, worst := pickup(t, e, started, 5)
	t.Logf("pickup after reconnect: p50 %s, max %s", p50, worst)
	if worst > time.Second {
		t.Errorf("pickup after reconnect took %s: notifications are not back", worst)
	}
}
