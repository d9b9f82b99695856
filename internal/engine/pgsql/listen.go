package pgsql

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// listenCheck is how long a Listener waits for a notification before it
// pings its connection: a connection that died without the socket noticing
// must not leave its owner deaf for long.
const listenCheck = 30 * time.Second

// Listener holds a LISTEN on one channel, on a connection of its own, and
// makes it again, with backoff, whenever it is lost. The worker's pools and
// the relay each run one; while it is down they find work by polling.
type Listener struct {
	// Conn is the configuration of the LISTEN connection.
	Conn *pgx.ConnConfig
	// Channel is the channel to LISTEN on.
	Channel string
	// MinBackoff and MaxBackoff bound the wait, doubled from one failed
	// attempt to the next with jitter, before the next connect.
	MinBackoff, MaxBackoff time.Duration
	// Notified is called with each notification's payload.
	Notified func(payload string)
	// Listening is called each time a LISTEN is in place, back is true
	// after a failure. Notifications sent while none was in place are
	// lost: look for work now.
	Listening func(back bool)
	// Lost is called when a connect fails (wasListening false) or the
	// connection of a LISTEN in place is lost (wasListening true).
	Lost func(err error, wasListening bool)
}

// Connect opens a connection and LISTENs on it.
func (l *Listener) Connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.Conn.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.Channel}.Sanitize()); err != nil {
		closeQuietly(conn)
		return nil, err
	}
	return conn, nil
}

// Run listens until ctx ends, starting with conn (from Connect) if it is
// not nil, and closes its connection at the end.
func (l *Listener) Run(ctx context.Context, conn *pgx.Conn) {
	down := conn == nil
	var backoff time.Duration
	for {
		if conn == nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			var err error
			conn, err = l.Connect(cctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				l.Lost(err, false)
				backoff = NextBackoff(backoff, l.MinBackoff, l.MaxBackoff)
				t := time.NewTimer(Jitter(backoff))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				continue
			}
		}
		l.Listening(down)
		down, backoff = false, 0
		err := l.wait(ctx, conn)
		closeQuietly(conn)
		conn = nil
		if ctx.Err() != nil {
			return
		}
		l.Lost(err, true)
		down = true
	}
}

// wait hands conn's notifications to Notified until the connection fails
// or ctx ends.
func (l *Listener) wait(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.Notified(n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func closeQuietly(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// NextBackoff doubles prev within [lo, hi].
func NextBackoff(prev, lo, hi time.Duration) time.Duration {
	if prev < lo {
		return lo
	}
	if prev >= hi/2 {
		return hi
	}
	return prev * 2
}

// Jitter returns a random duration in [d/2, d], so that processes backing
// off from the same outage do not return all at once.
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
