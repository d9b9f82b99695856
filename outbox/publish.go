package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// Limits on events, checked by Publish before anything is sent.
const (
	// MaxTopicLen is the longest topic, in bytes: Kafka's limit on topic
	// names, which NATS subjects and RabbitMQ routing keys also accept.
	MaxTopicLen = 249
	// MaxHeaderBytes bounds the summed length of an event's header names
	// and values.
	MaxHeaderBytes = 16 << 10
	// DefaultMaxEventPayload is the payload limit when
	// Config.MaxEventPayload is zero: 1 MiB, the default max_payload of a
	// NATS server.
	DefaultMaxEventPayload = 1 << 20
	// EventParts is the number of partitions events are spread over; each
	// is published by one relay at a time (see package outbox/relay).
	EventParts = 64
	// ReservedHeaderPrefix starts the header names Docket's relay sets
	// itself; Publish refuses them in a Message.
	ReservedHeaderPrefix = "Docket-"
)

// ErrInvalidEvent wraps every validation failure of Publish and
// PublishMany. Such an event is rejected before anything is sent to the
// database, so a caller's transaction stays usable. Its message names the
// topic and what is wrong, never the payload.
var ErrInvalidEvent = errors.New("docket: invalid event")

// ErrSerialization wraps the SQLSTATE 40001 (serialization_failure) error
// of a keyed Publish, PublishSQL or PublishMany in a REPEATABLE READ or
// SERIALIZABLE transaction that another transaction's publish of the same
// key overtook: committed after the caller's snapshot was taken, or in
// flight and committed while the caller waited for the key. The key's next
// seq is not in the caller's snapshot, so nothing can be written; the
// caller's transaction is aborted and must be run again from its start.
// The PostgreSQL error stays in the chain, so a retry loop that looks for
// SQLSTATE 40001 with errors.As(err, **pgconn.PgError) sees it too.
// READ COMMITTED transactions never get it: they wait for the other
// transaction and take the seq after its.
var ErrSerialization = errors.New("docket: serialization failure: another transaction published the same key; run the transaction again")

// Message is an event to publish: written in the caller's transaction and
// delivered to a broker by the relay once that transaction commits.
type Message struct {
	// Topic names the destination. 1 to MaxTopicLen bytes of ASCII letters,
	// digits, '.', '_' and '-', without an empty dot-separated token: a name
	// every supported broker accepts (a NATS subject, a Kafka topic, a
	// RabbitMQ routing key). The relay's publisher may map it further.
	Topic string
	// Key orders events: events with the same key reach the broker in the
	// order their transactions committed. Empty means no order is needed.
	// At most docket.MaxKeyLen bytes of valid UTF-8 without NUL.
	Key string
	// Payload is the body, passed to the broker unchanged. At most
	// Config.MaxEventPayload bytes, and never more than 1 GiB - 1 MiB
	// (1,072,693,248 bytes: PostgreSQL's 1 GiB limit on one protocol
	// message, less room for the other columns); nil is an empty body.
	Payload []byte
	// Headers are passed to the broker as message headers. Names are
	// printable ASCII without spaces or ':' and must not start with
	// ReservedHeaderPrefix; values are valid UTF-8 without CR, LF or NUL.
	// The trace context of Publish's ctx is added under "traceparent" (and
	// "tracestate") unless set (see Config.Propagator). The caller's map is
	// never modified.
	Headers map[string]string
}

// Published reports where Publish put an event.
type Published struct {
	// ID is the event's id, which the relay sends as the broker's
	// de-duplication id and consumers record in their inbox.
	ID int64
	// Seq is the event's place among the events of its key, from 1 with no
	// gaps; 0 for an event without key.
	Seq int64
}

// event is a validated, encoded Message ready to write.
type event struct {
	topic, key string
	payload    []byte
	headers    []byte // JSON object, nil when none
}

// part is the relay partition of a keyed event: a hash of its key.
func keyPart(key string) int16 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int16(h.Sum32() % EventParts)
}

func (c *Client) prepareEvent(ctx context.Context, m Message) (event, error) {
	if err := checkTopic(m.Topic); err != nil {
		return event{}, err
	}
	if len(m.Key) > core.MaxKeyLen {
		return event{}, fmt.Errorf("%w: topic %s: key longer than %d bytes", ErrInvalidEvent, m.Topic, core.MaxKeyLen)
	}
	if p := core.BadText(m.Key); p != "" {
		return event{}, fmt.Errorf("%w: topic %s: key %s", ErrInvalidEvent, m.Topic, p)
	}
	if c.maxPayload > 0 && len(m.Payload) > c.maxPayload {
		return event{}, fmt.Errorf("%w: topic %s: payload of %d bytes over the limit of %d", ErrInvalidEvent, m.Topic, len(m.Payload), c.maxPayload)
	}
	if len(m.Payload) > pgsql.MaxRowBytes {
		return event{}, fmt.Errorf("%w: topic %s: payload of %d bytes over the limit of %d one PostgreSQL row can carry", ErrInvalidEvent, m.Topic, len(m.Payload), pgsql.MaxRowBytes)
	}
	headers := core.TraceMeta(ctx, c.prop, m.Headers)
	size := 0
	for k, v := range headers {
		if err := checkHeader(k, v); err != nil {
			return event{}, fmt.Errorf("%w: topic %s: %w", ErrInvalidEvent, m.Topic, err)
		}
		size += len(k) + len(v)
	}
	if size > MaxHeaderBytes {
		return event{}, fmt.Errorf("%w: topic %s: headers of %d bytes over the limit of %d", ErrInvalidEvent, m.Topic, size, MaxHeaderBytes)
	}
	ev := event{topic: m.Topic, key: m.Key, payload: m.Payload}
	if ev.payload == nil {
		ev.payload = []byte{}
	}
	if len(headers) > 0 {
		b, err := json.Marshal(headers)
		if err != nil {
			return event{}, fmt.Errorf("%w: topic %s: encode headers: %w", ErrInvalidEvent, m.Topic, err)
		}
		ev.headers = b
	}
	return ev, nil
}

func checkTopic(t string) error {
	if t == "" {
		return fmt.Errorf("%w: empty topic", ErrInvalidEvent)
	}
	if len(t) > MaxTopicLen {
		return fmt.Errorf("%w: topic longer than %d bytes", ErrInvalidEvent, MaxTopicLen)
	}
	for i := 0; i < len(t); i++ {
		b := t[i]
		ok := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-'
		if !ok {
			return fmt.Errorf("%w: topic %q: only ASCII letters, digits, '.', '_' and '-' are allowed", ErrInvalidEvent, t)
		}
	}
	if t[0] == '.' || t[len(t)-1] == '.' || strings.Contains(t, "..") {
		return fmt.Errorf("%w: topic %q has an empty dot-separated token", ErrInvalidEvent, t)
	}
	return nil
}

func checkHeader(k, v string) error {
	if k == "" {
		return errors.New("empty header name")
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] >= 0x7f || k[i] == ':' {
			return fmt.Errorf("header name %q: only printable ASCII without spaces or ':'", k)
		}
	}
	if len(k) >= len(ReservedHeaderPrefix) && strings.EqualFold(k[:len(ReservedHeaderPrefix)], ReservedHeaderPrefix) {
		return fmt.Errorf("header name %q: the prefix %s is reserved for the relay", k, ReservedHeaderPrefix)
	}
	if !utf8.ValidString(v) || strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("header %q: value is not valid UTF-8 or holds CR, LF or NUL", k)
	}
	return nil
}

// Publish writes one event through db. Pass the caller's transaction: the
// event is delivered to the broker by the relay once that transaction
// commits, and never if it rolls back.
//
// A keyed event takes its key's row lock in docket_event_keys until db's
// transaction ends, which is how events of one key are published in commit
// order: a second transaction publishing the same key waits for the first.
// Keep transactions that publish keyed events short. In a REPEATABLE READ or
// SERIALIZABLE transaction, a keyed publish overtaken by another
// transaction's publish of the same key returns an ErrSerialization error:
// run the whole transaction again.
//
// An invalid Message (see its fields) returns an ErrInvalidEvent error and
// missing tables an ErrNotMigrated error, both before anything is sent, so
// the caller's transaction stays usable.
func (c *Client) Publish(ctx context.Context, db DB, m Message) (Published, error) {
	return c.publish(ctx, pgsql.OnPgx(db), m)
}

// PublishSQL is Publish through database/sql: pass the caller's *sql.Tx (or
// an Ent transaction, see package ent) to commit the event with the
// caller's writes.
func (c *Client) PublishSQL(ctx context.Context, db SQLDB, m Message) (Published, error) {
	return c.publish(ctx, pgsql.OnSQL(db), m)
}

func (c *Client) publish(ctx context.Context, cn pgsql.Conn, m Message) (Published, error) {
	ev, err := c.prepareEvent(ctx, m)
	if err != nil {
		return Published{}, err
	}
	if err := c.checkEvents(ctx, cn); err != nil {
		return Published{}, err
	}
	// The announcement is sent in the insert's own statement, so a publish
	// costs one round trip; it reaches the relays when the caller commits.
	var channel any
	now := time.Now()
	prev, announce := c.notified.Take(eventsAnnounced, now)
	if announce {
		channel = c.EventChannel()
	}
	var p Published
	var notified *bool
	scan := func(scan func(...any) error) error { return scan(&p.ID, &p.Seq, &notified) }
	if ev.key == "" {
		err = cn.Query(ctx, sqlPublish.For(c.schema), []any{ev.topic, ev.payload, pgsql.NullJSON(ev.headers), channel}, scan)
	} else {
		err = cn.Query(ctx, sqlPublishKeyed.For(c.schema), []any{ev.topic, ev.key, keyPart(ev.key), ev.payload, pgsql.NullJSON(ev.headers), channel}, scan)
	}
	if err != nil {
		if announce {
			c.notified.GiveBack(eventsAnnounced, now, prev)
		}
		return Published{}, c.wrapErr(serializationErr(err, "topic "+ev.topic))
	}
	return p, nil
}

// serializationErr wraps a serialization failure of a publish (of what) in
// ErrSerialization, and returns any other error as it is.
func serializationErr(err error, what string) error {
	if pgsql.SQLState(err) != pgsql.CodeSerializationFailure {
		return err
	}
	return fmt.Errorf("%w (%s): %w", ErrSerialization, what, err)
}

// eventsAnnounced is the debounce entry of event announcements beside the
// queues' (queue names cannot start with '@').
const eventsAnnounced = "@events"

// PublishMany writes many events with one COPY and returns one result per
// message, in order. Messages of one key get consecutive sequence numbers
// in slice order. Pass the caller's pgx.Tx to commit them with the caller's
// writes; with a pool or connection the batch is written in a transaction
// of its own. Any invalid message fails the call with an ErrInvalidEvent
// error naming its index, before anything is sent. Keyed messages may fail
// with ErrSerialization, as for Publish.
func (c *Client) PublishMany(ctx context.Context, db DB, msgs []Message) ([]Published, error) {
	evs := make([]event, len(msgs))
	for i, m := range msgs {
		ev, err := c.prepareEvent(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		evs[i] = ev
	}
	if len(evs) == 0 {
		return nil, nil
	}
	if err := c.checkEvents(ctx, pgsql.OnPgx(db)); err != nil {
		return nil, err
	}
	var out []Published
	write := func(tx DB) error {
		var err error
		out, err = c.publishMany(ctx, tx, evs)
		return err
	}
	var err error
	switch d := db.(type) {
	case pgx.Tx:
		err = write(d)
	case pgsql.Beginner:
		err = pgx.BeginFunc(ctx, d, func(tx pgx.Tx) error { return write(tx) })
	default:
		err = write(db)
	}
	return out, c.wrapErr(serializationErr(err, fmt.Sprintf("%d events", len(evs))))
}

func (c *Client) publishMany(ctx context.Context, db DB, evs []event) ([]Published, error) {
	cp, ok := db.(pgsql.Copier)
	if !ok {
		return nil, fmt.Errorf("docket: %T cannot COPY; pass a pgx.Tx, *pgx.Conn or *pgxpool.Pool", db)
	}
	// Keys are locked in sorted order, so two batches never deadlock.
	counts := map[string]int64{}
	for _, ev := range evs {
		if ev.key != "" {
			counts[ev.key]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	next := map[string]int64{} // the next seq to hand out per key
	if len(keys) > 0 {
		ns := make([]int64, len(keys))
		for i, k := range keys {
			ns[i] = counts[k]
		}
		rows, err := db.Query(ctx, sqlReserveSeqs.For(c.schema), keys, ns)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			var last int64
			if err := rows.Scan(&k, &last); err != nil {
				rows.Close()
				return nil, err
			}
			next[k] = last - counts[k] + 1
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	// Ids are drawn after the keys are locked: among one key's events id
	// order is then commit order, as for Publish.
	ids, err := c.ids(ctx, db, sqlEventIDs.For(c.schema), len(evs))
	if err != nil {
		return nil, err
	}
	out := make([]Published, len(evs))
	for i, ev := range evs {
		out[i].ID = ids[i]
		if ev.key != "" {
			out[i].Seq = next[ev.key]
			next[ev.key]++
		}
	}
	cols := []string{"id", "topic", "key", "seq", "part", "payload", "headers"}
	if _, err := cp.CopyFrom(ctx, pgx.Identifier{c.schema, "docket_events"}, cols, &eventCopy{evs: evs, out: out}); err != nil {
		return nil, err
	}
	now := time.Now()
	if prev, ok := c.notified.Take(eventsAnnounced, now); ok {
		if _, err := db.Exec(ctx, pgsql.NotifyEvents, c.EventChannel()); err != nil {
			c.notified.GiveBack(eventsAnnounced, now, prev)
			return nil, err
		}
	}
	return out, nil
}

// eventCopy feeds PublishMany's COPY from the events one row at a time,
// in one reused row of values, instead of a row slice per event built
// beforehand.
type eventCopy struct {
	evs    []event
	out    []Published // the events' ids and seqs, in the same order
	at     int         // 1 + the index of the current event
	values [7]any
}

func (c *eventCopy) Next() bool {
	c.at++
	return c.at <= len(c.evs)
}

func (c *eventCopy) Values() ([]any, error) {
	ev, p := &c.evs[c.at-1], c.out[c.at-1]
	c.values = [7]any{p.ID, ev.topic, nil, nil, int16(p.ID % EventParts), ev.payload, pgsql.RawJSON(ev.headers)}
	if ev.key != "" {
		c.values[2], c.values[3], c.values[4] = ev.key, p.Seq, keyPart(ev.key)
	}
	return c.values[:], nil
}

func (c *eventCopy) Err() error { return nil }

// checkEvents is checkMigrated for the events table of migration 007.
func (c *Client) checkEvents(ctx context.Context, cn pgsql.Conn) error {
	if c.eventsMigrated.Load() {
		return nil
	}
	var ok bool
	err := cn.Query(ctx, pgsql.TableExists, []any{`"` + c.schema + `".docket_events`}, func(scan func(...any) error) error {
		return scan(&ok)
	})
	if err != nil {
		return c.wrapErr(err)
	}
	if !ok {
		return fmt.Errorf("%w (schema %s: no events table; migration 7)", ErrNotMigrated, c.schema)
	}
	c.eventsMigrated.Store(true)
	return nil
}

var (
	// sqlPublish writes an event without key; its partition follows its id.
	// When $4 names a channel it announces the event there (see
	// EventChannel).
	sqlPublish = pgsql.SQL(`WITH e AS (
	INSERT INTO {{schema}}.docket_events (id, topic, part, payload, headers)
	SELECT i.id, $1::text, i.id % 64, $2::bytea, $3::jsonb
	FROM (SELECT nextval('{{schema}}.docket_events_id_seq') AS id) i
	RETURNING id
)
SELECT id, 0::bigint, CASE WHEN $4::text IS NOT NULL THEN pg_notify($4, '') IS NOT NULL END FROM e`)

	// sqlPublishKeyed bumps the key's sequence, which locks its row until
	// the transaction ends, and draws the event's id in RETURNING, that is
	// once the lock is held. $6 as sqlPublish's $4.
	sqlPublishKeyed = pgsql.SQL(`WITH k AS (
	INSERT INTO {{schema}}.docket_event_keys AS k (key, seq) VALUES ($2::text, 1)
	ON CONFLICT (key) DO UPDATE SET seq = k.seq + 1
	RETURNING k.seq, nextval('{{schema}}.docket_events_id_seq') AS id
), e AS (
	INSERT INTO {{schema}}.docket_events (id, topic, key, seq, part, payload, headers)
	SELECT k.id, $1::text, $2::text, k.seq, $3::smallint, $4::bytea, $5::jsonb FROM k
	RETURNING id, seq
)
SELECT id, seq, CASE WHEN $6::text IS NOT NULL THEN pg_notify($6, '') IS NOT NULL END FROM e`)

	// sqlReserveSeqs takes $2[i] sequence numbers for key $1[i], locking the
	// keys in the order given, and returns each key's last number.
	sqlReserveSeqs = pgsql.SQL(`INSERT INTO {{schema}}.docket_event_keys AS k (key, seq)
SELECT key, n FROM unnest($1::text[], $2::bigint[]) AS r(key, n) ORDER BY key
ON CONFLICT (key) DO UPDATE SET seq = k.seq + EXCLUDED.seq
RETURNING key, seq`)

	sqlEventIDs = pgsql.SQL(`SELECT nextval('{{schema}}.docket_events_id_seq') FROM generate_series(1, $1::int)`)
)
