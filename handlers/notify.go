package handlers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// listenCheck is how long the listener waits for a notification before it
// checks that its connection is still alive: a connection that died
// without the socket noticing must not leave the worker deaf for long.
const listenCheck = 30 * time.Second

// listener LISTENs on a dedicated connection and wakes the pools of the
// queues named in notifications. The worker runs one unless notifications
// are off.
type listener struct {
	loop
	w    *Worker
	conn *pgx.ConnConfig // of the LISTEN connection
}

// newListener makes the worker's listener. Its connection uses listenURL
// when set (Config.ListenURL: straight to PostgreSQL past a transaction
// pooler), else the pool's own settings.
func newListener(w *Worker, listenURL string) (*listener, error) {
	if listenURL == "" {
		return &listener{w: w, conn: w.db.Config().ConnConfig}, nil
	}
	cfg, err := pgx.ParseConfig(listenURL)
	if err != nil {
		return nil, err
	}
	return &listener{w: w, conn: cfg}, nil
}

// start makes the first LISTEN before Start returns, so that jobs enqueued
// after it are announced; if it fails, the listener keeps trying.
func (l *listener) start(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := l.connect(cctx)
	cancel()
	if err != nil {
		l.w.log.Warn("LISTEN failed; polling until it succeeds", slog.String("error", err.Error()))
	}
	l.run(ctx, func(ctx context.Context) { l.listen(ctx, conn) })
}

// connect opens the dedicated LISTEN connection.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	w := l.w
	conn, err := pgx.ConnectConfig(ctx, l.conn.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{w.ob.NotifyChannel()}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// listen wakes the pools of the queues named in notifications. When its
// connection is lost it reconnects with backoff; meanwhile the pools poll.
// After reconnecting it wakes every pool, since notifications sent while it
// was away are lost.
func (l *listener) listen(ctx context.Context, conn *pgx.Conn) {
	w := l.w
	wait := 100 * time.Millisecond
	down := conn == nil
	for {
		if conn == nil {
			var err error
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			conn, err = l.connect(cctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, 5*time.Second)
				continue
			}
			if down {
				w.log.Info("LISTEN connection is back")
				w.met.reconnected()
			}
			down, wait = false, 100*time.Millisecond
			w.wakeAll()
		}
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err == nil {
			w.notified(n.Payload)
			continue
		}
		if ctx.Err() != nil {
			closeConn(conn)
			return
		}
		if errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		w.log.Warn("LISTEN connection lost; polling until it is back", slog.String("error", err.Error()))
		closeConn(conn)
		conn, down = nil, true
	}
}

// notified handles one notification: its payload is a queue name.
func (w *Worker) notified(queue string) {
	debounce := w.ob.NotifyDebounce()
	for _, p := range w.byQueue[queue] {
		p.notified(debounce)
	}
}
