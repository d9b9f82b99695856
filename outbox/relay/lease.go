package relay

import (
	"context"
	"slices"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// parts is the number of partitions events are spread over (outbox.EventParts).
const parts = 64

// maintainLeases registers the relay, renews the partitions it holds, and
// moves it toward its share (see share): it gives back the partitions
// above its share and takes free or expired ones below it.
// It runs between rounds, so no message of a partition given back is in
// flight. All in one transaction, so the count and the moves agree. It
// returns whether the relay is short of its share: it then looks again
// soon rather than a lease period later. A relay short of its share, and
// one that gave partitions back, say so on the event channel, so that the
// others give back or take at once.
//
// A relay that holds an ID runs it on the session that holds the ID, so
// that a relay that lost its session changes nothing. The first run of a
// hold renews the partitions a previous holder of the ID left under lease
// and holds off publishing them (see holdOff).
func (r *Relay) maintainLeases(ctx context.Context) (short bool, err error) {
	ttlMS := r.ttl.Milliseconds()
	// A lease transaction that outlasts the lease is stuck on a dead
	// connection: give up, and let the next one try.
	ctx, cancel := context.WithTimeout(ctx, r.ttl)
	defer cancel()
	err = r.withLeaseDB(func(db leaseDB) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			var live, rank int
			if err := tx.QueryRow(ctx, sqlRegister.For(r.cfg.Schema), r.id, r.ID(), ttlMS).Scan(&live, &rank); err != nil {
				return err
			}
			owned, err := scanParts(tx.Query(ctx, sqlRenew.For(r.cfg.Schema), r.id, ttlMS))
			if err != nil {
				return err
			}
			if r.fresh && len(owned) > 0 {
				r.publishAfter = r.heldAt.Add(r.holdOff())
			}
			share := share(live, rank)
			switch {
			case len(owned) > share:
				slices.Sort(owned)
				extra := owned[share:]
				if _, err := tx.Exec(ctx, sqlGiveBack.For(r.cfg.Schema), r.id, extra); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, pgsql.NotifyRebalance, r.channel); err != nil {
					return err
				}
				owned = owned[:share]
			case len(owned) < share:
				more, err := scanParts(tx.Query(ctx, sqlTake.For(r.cfg.Schema), r.id, ttlMS, share-len(owned)))
				if err != nil {
					return err
				}
				owned = append(owned, more...)
			}
			slices.Sort(owned)
			r.owned = owned
			r.parts.Store(int64(len(owned)))
			short = len(owned) < share
			if short && live <= parts {
				// Ask the relays above their share to give back now rather
				// than at their next renewal.
				if _, err := tx.Exec(ctx, pgsql.NotifyRebalance, r.channel); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err == nil && r.fresh {
		r.fresh = false
		if wait := time.Until(r.publishAfter); wait > 0 {
			r.log.Info("docket: relay took back the partitions of its id; it publishes them once a previous holder must have stopped", "wait", wait.Round(time.Millisecond))
		}
	}
	return short, err
}

// share is the number of partitions of the relay ranked rank (from 0) by
// id among live relays: 64 / live, one more for the first 64 % live, so
// that the shares add up to 64. Were every share ceil(64 / live), a relay
// could stay short of it for good (22, 22 and 20 of 64) and ask the
// others to give back at every check.
func share(live, rank int) int {
	live = max(live, 1)
	n := parts / live
	if rank < parts%live {
		n++
	}
	return n
}

func scanParts(rows pgx.Rows, err error) ([]int16, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int16])
}

var (
	// sqlRegister renews the relay's presence, forgets relays gone for a
	// minute, and counts the live ones (this one included) and those of
	// them with a smaller id (its rank).
	sqlRegister = pgsql.SQL(`WITH me AS (
	INSERT INTO {{schema}}.docket_relays (id, name, lease_until)
	VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond')
	ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until
	RETURNING id
), gone AS (
	DELETE FROM {{schema}}.docket_relays WHERE lease_until < now() - interval '1 minute'
)
SELECT 1 + count(*), count(*) FILTER (WHERE id < $1) FROM {{schema}}.docket_relays WHERE lease_until > now() AND id <> $1`)

	sqlRenew = pgsql.SQL(`UPDATE {{schema}}.docket_relay_parts
SET lease_until = now() + $2::bigint * interval '1 millisecond'
WHERE owner = $1 AND lease_until > now()
RETURNING part`)

	sqlGiveBack = pgsql.SQL(`UPDATE {{schema}}.docket_relay_parts SET owner = NULL, lease_until = NULL
WHERE owner = $1 AND part = ANY($2::smallint[])`)

	// sqlTake takes up to $3 partitions that nobody holds or whose holder
	// let its lease expire.
	sqlTake = pgsql.SQL(`UPDATE {{schema}}.docket_relay_parts p
SET owner = $1, lease_until = now() + $2::bigint * interval '1 millisecond'
WHERE p.part IN (
	SELECT part FROM {{schema}}.docket_relay_parts
	WHERE owner IS NULL OR lease_until <= now()
	ORDER BY part LIMIT $3
	FOR UPDATE SKIP LOCKED)
RETURNING p.part`)

	// sqlLeave gives back every partition, removes the relay and announces
	// the partitions on channel $2 (see maintainLeases).
	sqlLeave = pgsql.SQL(`WITH parts AS (
	UPDATE {{schema}}.docket_relay_parts SET owner = NULL, lease_until = NULL WHERE owner = $1
), gone AS (
	DELETE FROM {{schema}}.docket_relays WHERE id = $1
)
SELECT pg_notify($2, '` + rebalancePayload + `')`)
)

// rebalancePayload marks a notification on the event channel that says
// partitions were given back.
const rebalancePayload = "rebalance"
