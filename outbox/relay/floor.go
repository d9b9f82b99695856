package relay

import (
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// The fetch's floor.
//
// Marking an event published is an update the pending index cannot drop
// at once: the entry of the event's pending version stays until vacuum
// removes it. A fetch that walks the index from its start reads every such
// entry, hundreds of index pages for a caught-up relay. So a relay keeps a
// floor, an id below which no event of its partitions is pending or can
// still become visible, and fetches from there.
//
// Events commit out of id order: a transaction that drew a low id may
// commit after events with higher ids were published. The floor therefore
// moves in two steps. A candidate records S, the highest id drawn so far
// (the sequence's last value, read first), and then the transactions in
// progress in the database (pg_stat_activity: each by its backend and the
// start of its transaction; a transaction that draws an id started before
// S was read, so it is among them or had ended). Once none of them is in
// progress any more, every event with an id up to S is either committed
// or will never exist, and the fetch that follows sees every one pending:
// the floor becomes the least of S + 1, the first id that fetch returned
// and the ids in flight (published but not yet marked). Transactions
// without an xid are covered, as are publishers of any version.
//
// No candidate is taken when that cannot be proved: when a backend of the
// database hides its activity from the relay's role or does not report it
// (track_activities off), when transactions may be prepared (two-phase
// commit: max_prepared_transactions above 0) or when the sequence caches
// ids per session.
//
// Events may also become pending again below the floor: a dead letter
// replayed, or the later events of its key, held back by it, once it is
// purged. Replay and purge say so on the event channel, and the relay
// starts again from no floor; it also does at every lease renewal (which
// is when the partitions it holds may change), for operations that did not
// notify. The announcement reaches the relay after the replay commits, so
// a fetch may see the key unblocked while it still fetches from the floor:
// it would pass the key's later events above the floor before the events
// below it. So a floor keeps the keys that dead letters blocked when it
// was set, and a fetch that finds one of them no longer blocked, in its
// own snapshot, fetches from no floor. The keys are read in the batch of
// the fetch that sets the floor, before it: a key becomes blocked only by
// the relay's own refusals, which never run during its fetch.

// floorCand is a candidate floor: seq, the highest id drawn, and the
// transactions in progress after it was read.
type floorCand struct {
	seq    int64
	pids   []int32
	starts []time.Time
}

// floorState is a relay's floor and its candidate; the zero value is no
// floor. A mark-and-fetch batch reads it and returns the next one.
type floorState struct {
	floor int64      // fetch from this id
	keys  []string   // while all of these keys are blocked by a dead letter
	cand  *floorCand // nil: none taken yet
	asked time.Time  // when a batch last carried the floor's statements
}

// floorEvery is how often a batch carries the floor's statements: the
// floor moves at most that often, so a caught-up fetch walks the entries
// of the events published in the last two such intervals at most, and a
// relay at a steady rate pays for them in a few of its rounds only.
const floorEvery = 25 * time.Millisecond

// due says whether a batch sent at now carries the floor's statements.
func (f floorState) due(now time.Time) bool { return now.Sub(f.asked) >= floorEvery }

// queue adds the floor's statements to a mark-and-fetch batch, ahead of
// the fetch: the sequence's last value (for a candidate taken when the last
// one is proved, or when there is none), then the transactions in progress.
func (f floorState) queue(b *pgx.Batch, schema string, parts []int16) {
	b.Queue(sqlFloorSeq.For(schema), parts)
	pids, starts := []int32{}, []time.Time{}
	if f.cand != nil {
		pids, starts = f.cand.pids, f.cand.starts
	}
	b.Queue(sqlFloorActivity.For(schema), pids, starts)
}

// floorRead is what a batch read of the floor's statements.
type floorRead struct {
	at     time.Time
	seq    *int64   // nil: no candidate can be taken
	keys   []string // blocked by a dead letter in the relay's partitions
	gone   bool     // the candidate's transactions all ended
	usable bool     // every backend of the database reports its activity
	pids   []int32
	starts []time.Time
}

// read reads the results of the statements queue added.
func (f floorState) read(res pgx.BatchResults) (floorRead, error) {
	var fr floorRead
	if err := res.QueryRow().Scan(&fr.seq, &fr.keys); err != nil {
		return fr, err
	}
	err := res.QueryRow().Scan(&fr.gone, &fr.usable, &fr.pids, &fr.starts)
	return fr, err
}

// next returns the floor state after a fetch that read fr and returned
// events from id first (0: none), with ids inFlight left out.
func (f floorState) next(fr floorRead, first int64, inFlight []int64) floorState {
	f.asked = fr.at
	if f.cand != nil && fr.gone && fr.usable {
		floor := f.cand.seq + 1
		if first > 0 {
			floor = min(floor, first)
		}
		for _, id := range inFlight {
			floor = min(floor, id)
		}
		// Not the greater of the two: a fetch that found a key of the
		// floor unblocked fetched from no floor, and the old one no
		// longer holds.
		f.floor, f.keys = floor, fr.keys
		f.cand = nil
	}
	if f.cand == nil {
		if fr.seq != nil && fr.usable {
			f.cand = &floorCand{seq: *fr.seq, pids: fr.pids, starts: fr.starts}
		}
	}
	return f
}

var (
	// sqlFloorSeq reads the highest id drawn, or NULL when the floor
	// cannot be proved: ids cached per session are drawn out of the
	// sequence's order, and a prepared transaction leaves its session.
	// It also reads the keys blocked by a dead letter in partitions $1.
	sqlFloorSeq = pgsql.SQL(`SELECT CASE WHEN s.seqcache = 1 AND current_setting('max_prepared_transactions')::int = 0
	THEN (SELECT CASE WHEN q.is_called THEN q.last_value ELSE q.last_value - 1 END FROM {{schema}}.docket_events_id_seq q) END,
	(SELECT COALESCE(array_agg(DISTINCT d.key), '{}') FROM {{schema}}.docket_events d
		WHERE d.dead_at IS NOT NULL AND d.blocks_key AND d.part = ANY($1::smallint[]))
FROM pg_catalog.pg_sequence s
WHERE s.seqrelid = '{{schema}}.docket_events_id_seq'::regclass`)

	// sqlFloorActivity reads the transactions in progress in the database
	// (other than the relay's): whether none of transactions $1/$2 (by
	// backend and start) is still among them, whether every backend
	// reports its activity to the relay, and their backends and starts.
	sqlFloorActivity = pgsql.SQL(`WITH a AS MATERIALIZED (
	SELECT pid, state AS activity, xact_start FROM pg_catalog.pg_stat_activity
	WHERE datid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
		AND pid <> pg_backend_pid()
)
SELECT NOT EXISTS (SELECT FROM a JOIN unnest($1::int[], $2::timestamptz[]) o(pid, st) ON a.pid = o.pid AND a.xact_start = o.st),
	COALESCE(bool_and(a.activity IS NOT NULL AND a.activity <> 'disabled'), true),
	COALESCE(array_agg(a.pid) FILTER (WHERE a.xact_start IS NOT NULL), '{}'),
	COALESCE(array_agg(a.xact_start) FILTER (WHERE a.xact_start IS NOT NULL), '{}')
FROM a`)
)
