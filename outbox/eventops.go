package outbox

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// DeadEvent is an event the broker refused permanently as many times as the
// relay allows (relay.Config.MaxAttempts). Payloads are not listed: they
// may hold personal data.
type DeadEvent struct {
	ID        int64     `json:"id"`
	Topic     string    `json:"topic"`
	Key       string    `json:"key,omitempty"`
	Seq       int64     `json:"seq,omitempty"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	CreatedAt time.Time `json:"created_at"`
	DeadAt    time.Time `json:"dead_at"`
	// BlocksKey is true while the event holds back the later events of its
	// key: until it is replayed or purged, they wait.
	BlocksKey bool `json:"blocks_key"`
}

// ListDeadEvents returns up to limit dead events, oldest first; topic, when
// not empty, keeps that topic's only. limit <= 0 means 100.
func (c *Client) ListDeadEvents(ctx context.Context, db DB, topic string, limit int) ([]DeadEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.Query(ctx, sqlEventDeadList.For(c.schema), topic, limit)
	if err != nil {
		return nil, c.wrapErr(err)
	}
	defer rows.Close()
	var out []DeadEvent
	for rows.Next() {
		var d DeadEvent
		if err := rows.Scan(&d.ID, &d.Topic, &d.Key, &d.Seq, &d.Attempts, &d.LastError, &d.CreatedAt, &d.DeadAt, &d.BlocksKey); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, c.wrapErr(rows.Err())
}

// ReplayDeadEvents makes dead events pending again, with their attempts
// reset, and returns the ids it replayed; nil ids means every dead event.
// A replayed event keeps its id and sequence number, so it is published
// before the later events of its key that its dead letter held back.
// (Events dead-lettered with the skip option let later events of their key
// pass: replaying one publishes it after them.)
func (c *Client) ReplayDeadEvents(ctx context.Context, db DB, ids []int64) ([]int64, error) {
	return c.deadOp(ctx, db, sqlEventReplay.For(c.schema), ids)
}

// PurgeDeadEvents deletes dead events, never publishing them, and returns
// the ids it deleted; nil ids means every dead event. The later events of a
// key blocked by a purged event proceed.
func (c *Client) PurgeDeadEvents(ctx context.Context, db DB, ids []int64) ([]int64, error) {
	return c.deadOp(ctx, db, sqlEventPurge.For(c.schema), ids)
}

// deadOp runs a replay or purge and, when it changed events, says so on
// the event channel: the events it makes pending (the replayed ones, and
// the later events of keys a purged one held back) may lie below the id
// from which relays fetch, and a relay that hears it fetches from the
// oldest again.
func (c *Client) deadOp(ctx context.Context, db DB, sql string, ids []int64) ([]int64, error) {
	out, err := c.ids(ctx, db, sql, ids)
	if err != nil || len(out) == 0 {
		return out, err
	}
	if _, err := db.Exec(ctx, pgsql.NotifyReplay, c.EventChannel()); err != nil {
		return out, c.wrapErr(err)
	}
	return out, nil
}

// EventStatus is the relay's backlog (the docket_event_status view).
type EventStatus struct {
	// Pending is the number of committed events not yet acknowledged by
	// the broker (dead letters excluded).
	Pending int64 `json:"pending"`
	// OldestPending is the creation time of the oldest pending event; zero
	// when none. Lag is its age: the relay's lag.
	OldestPending time.Time     `json:"oldest_pending,omitzero"`
	Lag           time.Duration `json:"lag"`
	// Dead is the number of dead events; BlockedKeys how many keys they
	// hold back.
	Dead        int64 `json:"dead"`
	BlockedKeys int64 `json:"blocked_keys"`
	// Relays is the number of relays with a live lease.
	Relays int64 `json:"relays"`
}

// EventStatus reads the relay's backlog from the docket_event_status view
// (migration 011). Its counts walk the pending and dead indexes, never the
// published events, so its cost follows the backlog, not the retention.
func (c *Client) EventStatus(ctx context.Context, db DB) (EventStatus, error) {
	var s EventStatus
	var oldest *time.Time
	var lag float64
	err := db.QueryRow(ctx, sqlEventStatus.For(c.schema)).Scan(&s.Pending, &oldest, &lag, &s.Dead, &s.BlockedKeys, &s.Relays)
	if oldest != nil {
		s.OldestPending = *oldest
	}
	s.Lag = time.Duration(lag * float64(time.Second))
	return s, c.wrapErr(err)
}

var (
	sqlEventDeadList = pgsql.SQL(`SELECT id, topic, COALESCE(key, ''), COALESCE(seq, 0), attempts, COALESCE(last_error, ''),
	created_at, dead_at, blocks_key
FROM {{schema}}.docket_events
WHERE dead_at IS NOT NULL AND ($1 = '' OR topic = $1)
ORDER BY dead_at, id
LIMIT $2`)

	sqlEventReplay = pgsql.SQL(`UPDATE {{schema}}.docket_events
SET dead_at = NULL, blocks_key = false, attempts = 0
WHERE dead_at IS NOT NULL AND ($1::bigint[] IS NULL OR id = ANY($1))
RETURNING id`)

	sqlEventPurge = pgsql.SQL(`DELETE FROM {{schema}}.docket_events
WHERE dead_at IS NOT NULL AND ($1::bigint[] IS NULL OR id = ANY($1))
RETURNING id`)

	sqlEventStatus = pgsql.SQL(`SELECT pending, oldest_pending_at, lag_seconds, dead, blocked_keys, relays_live
FROM {{schema}}.docket_event_status`)
)
