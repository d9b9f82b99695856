package worker

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// listener LISTENs on a dedicated connection and wakes the pools of the
// queues named in notifications. The worker runs one unless notifications
// are off.
type listener struct {
	loop
	pgsql.Listener
	w *Worker
}

// newListener makes the worker's listener. Its connection uses listenURL
// when set (Config.ListenURL: straight to PostgreSQL past a transaction
// pooler), else the pool's own settings.
func newListener(w *Worker, listenURL string) (*listener, error) {
	conn := w.db.Config().ConnConfig
	if listenURL != "" {
		var err error
		if conn, err = pgx.ParseConfig(listenURL); err != nil {
			return nil, err
		}
	}
	return &listener{w: w, Listener: pgsql.Listener{
		Conn: conn, Channel: pgsql.NotifyChannel(w.schema),
		// Reconnecting at least once per poll interval: its return is
		// what ends the pools' wait after failed claims.
		MinBackoff: 100 * time.Millisecond, MaxBackoff: max(100*time.Millisecond, min(5*time.Second, w.poll)),
		Notified: func(payload string) {
			if w.notifyCheck == nil || !w.notifyCheck.notified(payload) {
				w.notified(payload)
			}
		},
		Listening: func(back bool) {
			if back {
				w.log.Info("LISTEN connection is back")
				w.met.reconnected()
			}
			if w.notifyCheck != nil {
				w.notifyCheck.listening()
			}
			// Notifications sent while no LISTEN was in place are lost,
			// and the database answers again: claim now.
			w.wakeReconnected()
		},
		Lost: func(err error, wasListening bool) {
			if wasListening {
				w.log.Warn("LISTEN connection lost; polling until it is back", slog.String("error", err.Error()))
			}
		},
	}}, nil
}

// start makes the first LISTEN before Start returns, so that jobs enqueued
// after it are announced; if it fails, the listener keeps trying.
func (l *listener) start(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := l.Connect(cctx)
	cancel()
	if err != nil {
		l.w.log.Warn("LISTEN failed; polling until it succeeds", slog.String("error", err.Error()))
	}
	l.run(ctx, func(ctx context.Context) { l.Run(ctx, conn) })
}

// notified handles one notification: its payload is a queue name, or a
// running job's cancel request (pgsql.CancelPayload and the job's id).
func (w *Worker) notified(queue string) {
	if id, ok := strings.CutPrefix(queue, pgsql.CancelPayload); ok {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			w.cancelRequested(n)
		}
		return
	}
	debounce := w.notifyDebounce
	for _, p := range w.byQueue[queue] {
		p.notified(debounce)
	}
}
