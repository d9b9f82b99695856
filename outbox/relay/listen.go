package relay

import (
	"context"
	"fmt"

	"github.com/docketq/docket/internal/engine/pgsql"
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

// ownConnConfig returns the configuration of the relay's connections of
// its own, straight to PostgreSQL: cfg.ListenURL, else, unless
// DisableNotify says there is a transaction pooler in the way, the
// configuration of db when it is a *pgxpool.Pool; else nil.
func ownConnConfig(cfg Config, db DB) (*pgx.ConnConfig, error) {
	if cfg.ListenURL != "" {
		conn, err := pgx.ParseConfig(cfg.ListenURL)
		if err != nil {
			return nil, fmt.Errorf("docket: relay ListenURL: %w", err)
		}
		return conn, nil
	}
	if p, ok := db.(interface{ Config() *pgxpool.Config }); ok && !cfg.DisableNotify {
		return p.Config().ConnConfig, nil
	}
	return nil, nil
}

// newListener returns the relay's listener on conn, or nil when
// notifications are off or there is no connection to listen on.
func newListener(r *Relay, conn *pgx.ConnConfig) *listener {
	if r.cfg.DisableNotify || conn == nil {
		return nil
	}
	l := &listener{wake: make(chan struct{}, 1)}
	l.Listener = pgsql.Listener{
		Conn: conn, Channel: r.channel, MinBackoff: r.cfg.MinBackoff, MaxBackoff: r.cfg.MaxBackoff,
		Notified: func(payload string) {
			switch payload {
			case rebalancePayload:
				r.rebalance.Store(true)
			case pgsql.ReplayPayload:
				r.floorReset.Store(true)
			}
			l.signal()
		},
		// Events may have been committed while nobody listened.
		Listening: func(bool) { l.signal() },
		Lost: func(err error, _ bool) {
			r.log.Warn("docket: relay LISTEN lost; polling until it is back", "err", err)
		},
	}
	return l
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
