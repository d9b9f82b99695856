package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listenCheck is how long the listener waits for a notification before it
// pings its connection: a connection that died without the socket noticing
// must not leave the relay deaf for long.
const listenCheck = 30 * time.Second

// listener LISTENs on the schema's event channel, on a connection of its
// own, and wakes the relay when a publisher announces committed events
// (outbox.Client.EventChannel). Without it, or while its connection is
// down, the relay finds events by polling.
type listener struct {
	conn    *pgx.ConnConfig
	channel string
	wake    chan struct{}
	relay   *Relay
}

// newListener returns the relay's listener, or nil when notifications are
// off or there is no connection to listen on: cfg.ListenURL, else the
// configuration of db when it is a *pgxpool.Pool.
func newListener(r *Relay, db DB) (*listener, error) {
	if r.cfg.DisableNotify {
		return nil, nil
	}
	var conn *pgx.ConnConfig
	switch p, ok := db.(interface{ Config() *pgxpool.Config }); {
	case r.cfg.ListenURL != "":
		var err error
		if conn, err = pgx.ParseConfig(r.cfg.ListenURL); err != nil {
			return nil, err
		}
	case ok:
		conn = p.Config().ConnConfig
	default:
		return nil, nil
	}
	return &listener{conn: conn, channel: r.channel, wake: make(chan struct{}, 1), relay: r}, nil
}

// signal wakes the relay unless a wake-up is pending already.
func (l *listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run listens until ctx ends, making its connection again with backoff
// when it is lost.
func (l *listener) run(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		backoff = nextBackoff(backoff, l.relay.cfg.MinBackoff, l.relay.cfg.MaxBackoff)
		l.relay.log.Warn("docket: relay LISTEN lost; polling until it is back", "err", err, "backoff", backoff)
		t := time.NewTimer(jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listen holds one LISTEN connection until it fails or ctx ends.
func (l *listener) listen(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, l.conn.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return err
	}
	// Events may have been committed while nobody listened.
	l.signal()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n.Payload == rebalancePayload {
				l.relay.rebalance.Store(true)
			}
			l.signal()
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
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
