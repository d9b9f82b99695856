package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/docketq/docket/internal/engine/queue"
	"github.com/jackc/pgx/v5/pgxpool"
)

// service is one of a worker's background duties: the heartbeat and its
// watchdog, the listener, presence, paused queues, the reaper, the promoter
// and history partition upkeep. The worker starts its services in order in
// Start, before the pools claim, and stops them in reverse order in Stop,
// once every outcome is written (leases are kept alive while they are).
// Each service owns its goroutine, its timers and its error logging.
type service interface {
	// start runs the service's goroutine. ctx is Start's: the goroutine
	// keeps its values but not its cancellation, and ends with stop.
	start(ctx context.Context)
	// stop ends the goroutine and waits for it to return.
	stop()
}

// upkeep is what the maintenance services (the reaper, the promoter,
// history partitions, the readers of paused queues and limits) need of
// their worker: the database and the protocol, the logger, how often to
// run and how long one round's statements may take, and how to wake the
// pools for the work they found. They hold it instead of the worker.
type upkeep struct {
	db    *pgxpool.Pool
	q     *queue.Queue
	log   *slog.Logger
	poll  time.Duration
	lease time.Duration
	// wakeAll makes every pool claim now; wakeQueues the pools of queues.
	wakeAll    func()
	wakeQueues func(queues []string)
}

// loop is the lifecycle services share: one goroutine under a context of
// its own, cancelled by stop. A service embeds it and calls run in start.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// run starts body in a goroutine; body returns when its ctx ends.
func (l *loop) run(ctx context.Context, body func(ctx context.Context)) {
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		body(ctx)
	}()
}

// stop cancels the goroutine's context and waits for it. A loop never run
// has nothing to stop.
func (l *loop) stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(ctx context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// maintenanceBatch bounds the rows one statement of the reaper or the
// promoter touches; a round repeats full batches.
const maintenanceBatch = 1000

// errStreak logs the first failure of a streak of a periodic operation and
// its recovery, instead of every failure while the database is away. Each
// is used by one goroutine at a time.
type errStreak struct{ failing bool }

func (s *errStreak) fail(log *slog.Logger, msg string, err error) {
	if !s.failing {
		log.Warn(msg+"; retrying quietly", slog.String("error", err.Error()))
		s.failing = true
	}
}

func (s *errStreak) ok(log *slog.Logger, msg string) {
	if s.failing {
		log.Info(msg)
		s.failing = false
	}
}
