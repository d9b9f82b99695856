package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// DefaultNotifyCheckTimeout is Config.NotifyCheckTimeout's default.
const DefaultNotifyCheckTimeout = 3 * time.Second

// ErrNotifyLost is what the worker reports (a WARN log, the /readyz body
// and Client.NotifyCheck) when its LISTEN connection did not receive, within
// Config.NotifyCheckTimeout, a NOTIFY the worker sent itself through DB.
// The worker still runs every job: its pools find them by polling, every
// PollInterval, instead of within milliseconds of the enqueue.
var ErrNotifyLost = errors.New("docket: the worker's LISTEN connection did not receive the NOTIFY the worker sent itself, " +
	"so notifications do not reach it and its pools find jobs only by polling every PollInterval; " +
	"behind PgBouncer in transaction mode set ListenURL to a direct PostgreSQL URL (docs/compatibility.md#pgbouncer)")

// notifyCheck checks, each time the listener makes its LISTEN, that a
// NOTIFY sent through the worker's pool reaches it. A transaction pooler
// forwards LISTEN and NOTIFY without complaint, but the notification goes
// to whichever client holds the server connection at that moment, never to
// the idle listener.
type notifyCheck struct {
	loop
	w       *Worker
	timeout time.Duration
	trigger chan struct{} // one pending check at most

	mu       sync.Mutex
	seq      int
	expected string        // payload of the check in flight; "" when none
	arrived  chan struct{} // closed when expected arrives
	done     bool          // a check has ended
	err      error         // of the last check that ended: nil or ErrNotifyLost
}

func newNotifyCheck(w *Worker, timeout time.Duration) *notifyCheck {
	return &notifyCheck{w: w, timeout: timeout, trigger: make(chan struct{}, 1)}
}

func (c *notifyCheck) start(ctx context.Context) {
	c.run(ctx, func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.trigger:
				c.check(ctx)
			}
		}
	})
}

// listening asks for a check: a LISTEN was just made.
func (c *notifyCheck) listening() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// notified reports whether payload is the check's own notification,
// which is then no queue's.
func (c *notifyCheck) notified(payload string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if payload == "" || payload != c.expected {
		return false
	}
	c.expected = ""
	close(c.arrived)
	return true
}

// check sends one NOTIFY with a payload no queue name can have (it holds
// spaces) and waits for it until the timeout. While the NOTIFY cannot be
// sent nothing is known: it is sent again with backoff, quietly (the
// worker's other services report the database's errors).
func (c *notifyCheck) check(ctx context.Context) {
	w := c.w
	c.mu.Lock()
	c.seq++
	payload := fmt.Sprintf("docket notify-check %s %d", w.id, c.seq)
	arrived := make(chan struct{})
	c.expected, c.arrived = payload, arrived
	c.mu.Unlock()

	var backoff time.Duration
	for {
		// NotifyQueues sends each entry as one notification's payload.
		sctx, cancel := context.WithTimeout(ctx, c.timeout)
		err := w.q.NotifyQueues(sctx, w.db, pgsql.NotifyChannel(w.schema), []string{payload})
		cancel()
		if err == nil {
			break
		}
		backoff = pgsql.NextBackoff(backoff, 100*time.Millisecond, 5*time.Second)
		t := time.NewTimer(pgsql.Jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	select {
	case <-ctx.Done():
	case <-arrived:
		c.end(nil)
	case <-deadline.C:
		c.end(fmt.Errorf("%w (waited %s)", ErrNotifyLost, c.timeout))
	}
}

// end records a check's result, logging a WARN when notifications are
// found lost and an INFO when they come back.
func (c *notifyCheck) end(err error) {
	c.mu.Lock()
	c.expected = ""
	wasLost := c.done && c.err != nil
	c.done, c.err = true, err
	c.mu.Unlock()
	switch {
	case err != nil && !wasLost:
		c.w.log.Warn("notifications do not reach this worker", slog.String("error", err.Error()))
	case err == nil && wasLost:
		c.w.log.Info("notifications reach this worker again")
	}
}

// result is what the last check found; done is false until one ended.
func (c *notifyCheck) result() (done bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done, c.err
}

// NotifyCheck reports what the worker found the last time it checked its
// notifications (see Config.NotifyCheckTimeout). done is false until a
// check has ended: the first begins when Start makes the LISTEN and
// usually ends within milliseconds. err is nil when the LISTEN connection
// received the worker's own NOTIFY, and an error wrapping ErrNotifyLost
// when it did not. With notifications or the check turned off, NotifyCheck
// returns true, nil.
func (w *Worker) NotifyCheck() (done bool, err error) {
	if w.notifyCheck == nil {
		return true, nil
	}
	return w.notifyCheck.result()
}

// readyNotes are the warnings /readyz adds to its answer: a lost
// notification check.
func (w *Worker) readyNotes() []string {
	if _, err := w.NotifyCheck(); err != nil {
		return []string{err.Error()}
	}
	return nil
}
