package relay

import (
	"context"

	"github.com/docketq/docket/internal/pgsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listener LISTENs on the schema's event channel, on a connection of its
// own, and wakes the relay when a publisher announces committed events
// (outbox.Client.EventChannel). Without it, or while its connection is
// down, the relay finds events by polling.
type listener struct {
	pgsql.Listener
	wake chan struct{}
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
	l := &listener{wake: make(chan struct{}, 1)}
	l.Listener = pgsql.Listener{
		Conn: conn, Channel: r.channel, MinBackoff: r.cfg.MinBackoff, MaxBackoff: r.cfg.MaxBackoff,
		Notified: func(payload string) {
			if payload == rebalancePayload {
				r.rebalance.Store(true)
			}
			l.signal()
		},
		// Events may have been committed while nobody listened.
		Listening: func(bool) { l.signal() },
		Lost: func(err error, _ bool) {
			r.log.Warn("docket: relay LISTEN lost; polling until it is back", "err", err)
		},
	}
	return l, nil
}

// signal wakes the relay unless a wake-up is pending already.
func (l *listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run listens until ctx ends.
func (l *listener) run(ctx context.Context) { l.Run(ctx, nil) }
