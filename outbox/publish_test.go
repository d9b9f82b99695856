package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// TestPublishRejectsBadInput: every invalid message is refused with
// ErrInvalidEvent before anything is sent, so the caller's transaction
// stays usable and nothing is written.
func TestPublishRejectsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, outbox.Config{MaxEventPayload: 100})
	long := strings.Repeat("a", outbox.MaxTopicLen+1)
	cases := []struct {
		name string
		m    outbox.Message
		want string
	}{
		{"empty topic", outbox.Message{}, "empty topic"},
		{"long topic", outbox.Message{Topic: long}, "longer than"},
		{"subject wildcard", outbox.Message{Topic: "orders.*"}, "only ASCII letters"},
		{"space in topic", outbox.Message{Topic: "orders placed"}, "only ASCII letters"},
		{"empty token", outbox.Message{Topic: "orders..placed"}, "empty dot-separated token"},
		{"leading dot", outbox.Message{Topic: ".orders"}, "empty dot-separated token"},
		{"long key", outbox.Message{Topic: "t", Key: strings.Repeat("k", docket.MaxKeyLen+1)}, "key longer than"},
		{"NUL in key", outbox.Message{Topic: "t", Key: "a\x00b"}, "NUL"},
		{"payload over limit", outbox.Message{Topic: "t", Payload: make([]byte, 101)}, "payload of 101 bytes over the limit of 100"},
		{"header name with colon", outbox.Message{Topic: "t", Headers: map[string]string{"a:b": "v"}}, "header name"},
		{"empty header name", outbox.Message{Topic: "t", Headers: map[string]string{"": "v"}}, "empty header name"},
		{"reserved header", outbox.Message{Topic: "t", Headers: map[string]string{"docket-seq": "1"}}, "reserved"},
		{"CRLF in header value", outbox.Message{Topic: "t", Headers: map[string]string{"h": "a\r\nb"}}, "CR, LF or NUL"},
		{"headers over limit", outbox.Message{Topic: "t", Headers: map[string]string{"h": strings.Repeat("v", outbox.MaxHeaderBytes)}}, "headers of"},
	}
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx)
	for _, c := range cases {
		_, err := b.client.Publish(b.ctx, tx, c.m)
		if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrInvalidEvent saying %q", c.name, err, c.want)
		}
		_, err = b.client.PublishMany(b.ctx, tx, []outbox.Message{{Topic: "ok"}, c.m})
		if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), "message 1") {
			t.Errorf("%s: PublishMany got %v, want ErrInvalidEvent naming message 1", c.name, err)
		}
	}
	// The transaction is still usable, and nothing was written.
	if _, err := b.client.Publish(b.ctx, tx, outbox.Message{Topic: "ok"}); err != nil {
		t.Fatalf("publish after rejections: %v", err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM "`+b.schema+`".docket_events`); n != 1 {
		t.Fatalf("%d events written, want 1", n)
	}
}

// TestPublishRefusesPayloadOverRowLimit: with MaxEventPayload -1, a payload
// of 1 GiB, more than PostgreSQL takes in the one protocol message that
// carries a statement's parameters (1 GiB - 2 bytes; a bigger one closes
// the connection), is refused before anything is sent, over pgx and
// database/sql, so the caller's transaction stays usable. Docket's limit
// leaves 1 MiB of that message to the other columns.
func TestPublishRefusesPayloadOverRowLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, outbox.Config{MaxEventPayload: -1})
	db := sql.OpenDB(stdlib.GetPoolConnector(b.pool))
	defer db.Close()
	// Zeroed pages validation never touches: no gigabyte is written.
	m := outbox.Message{Topic: "t", Payload: make([]byte, 1<<30)}
	const want = "topic t: payload of 1073741824 bytes over the limit of 1072693248 one PostgreSQL row can carry"
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want ErrInvalidEvent saying %q", what, err, want)
		}
	}
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx)
	_, err = b.client.Publish(b.ctx, tx, m)
	check("Publish", err)
	_, err = b.client.PublishMany(b.ctx, tx, []outbox.Message{{Topic: "ok"}, m})
	check("PublishMany", err)
	stx, err := db.BeginTx(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stx.Rollback()
	_, err = b.client.PublishSQL(b.ctx, stx, m)
	check("PublishSQL", err)
	// Both transactions are still usable, and nothing else was written.
	if _, err := b.client.Publish(b.ctx, tx, outbox.Message{Topic: "ok"}); err != nil {
		t.Fatalf("Publish after the refusals: %v", err)
	}
	if _, err := b.client.PublishSQL(b.ctx, stx, outbox.Message{Topic: "ok"}); err != nil {
		t.Fatalf("PublishSQL after the refusal: %v", err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := stx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM "`+b.schema+`".docket_events`); n != 2 {
		t.Fatalf("%d events written, want 2", n)
	}
}

// TestPublishRollback: a rolled-back publish leaves no event and no gap in
// its key's sequence.
func TestPublishRollback(t *testing.T) {
	t.Parallel()
	b := setup(t)
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := b.client.Publish(b.ctx, tx, outbox.Message{Topic: "t", Key: "k"}); err != nil {
			return err
		}
		return errors.New("rollback")
	})
	if err == nil || err.Error() != "rollback" {
		t.Fatal(err)
	}
	p, err := b.client.Publish(b.ctx, b.pool, outbox.Message{Topic: "t", Key: "k"})
	if err != nil || p.Seq != 1 {
		t.Fatalf("publish after rollback: %+v %v, want seq 1", p, err)
	}
	if n := b.count(t, `SELECT count(*) FROM "`+b.schema+`".docket_events`); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
}

// TestPublishManyAndSQL: COPY assigns consecutive per-key sequences in
// slice order after those of earlier publishes, and the database/sql path
// writes the same rows as the pgx one.
func TestPublishManyAndSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := sql.OpenDB(stdlib.GetPoolConnector(b.pool))
	defer db.Close()
	first, err := b.client.PublishSQL(b.ctx, db, outbox.Message{Topic: "t", Key: "a", Payload: []byte{0, 1, 2}, Headers: map[string]string{"h": "v"}})
	if err != nil || first.Seq != 1 {
		t.Fatalf("PublishSQL: %+v %v", first, err)
	}
	msgs := []outbox.Message{{Topic: "t", Key: "b"}, {Topic: "t", Key: "a", Payload: []byte("p1")},
		{Topic: "u", Payload: []byte("p2"), Headers: map[string]string{"h": "w"}}, {Topic: "t", Key: "a"}}
	got, err := b.client.PublishMany(b.ctx, b.pool, msgs)
	if err != nil {
		t.Fatal(err)
	}
	wantSeq := []int64{1, 2, 0, 3}
	for i, p := range got {
		if p.Seq != wantSeq[i] || p.ID <= first.ID {
			t.Errorf("message %d: %+v, want seq %d and an id after %d", i, p, wantSeq[i], first.ID)
		}
	}
	type row struct {
		topic, key string
		seq        int64
		part       int16
		payload    []byte
		headers    map[string]string
	}
	stored := func(id int64) row {
		var r row
		if err := b.pool.QueryRow(b.ctx, `SELECT topic, COALESCE(key, ''), COALESCE(seq, 0), part, payload, headers
			FROM "`+b.schema+`".docket_events WHERE id = $1`, id).Scan(&r.topic, &r.key, &r.seq, &r.part, &r.payload, &r.headers); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := stored(first.ID)
	if string(a.payload) != "\x00\x01\x02" || a.headers["h"] != "v" {
		t.Fatalf("stored payload %q headers %v", a.payload, a.headers)
	}
	// The rows PublishMany copied: a key's events share its partition, an
	// event without a key goes by its id.
	for i, p := range got {
		r, m := stored(p.ID), msgs[i]
		ok := r.topic == m.Topic && r.key == m.Key && r.seq == p.Seq && string(r.payload) == string(m.Payload) &&
			len(r.headers) == len(m.Headers) && r.headers["h"] == m.Headers["h"]
		switch {
		case m.Key == "a":
			ok = ok && r.part == a.part
		case m.Key == "":
			ok = ok && int64(r.part) == p.ID%outbox.EventParts
		}
		if !ok {
			t.Errorf("message %d (%+v) stored as %+v", i, m, r)
		}
	}
}

// TestPublishNotMigrated: without migration 7 Publish says so and leaves
// the transaction usable.
func TestPublishNotMigrated(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, _ := migrate.New(schema)
	if _, err := m.UpTo(context.Background(), pool, 6); err != nil {
		t.Fatal(err)
	}
	c, _ := outbox.New(outbox.Config{Schema: schema})
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := c.Publish(t.Context(), tx, outbox.Message{Topic: "t"}); !errors.Is(err, outbox.ErrNotMigrated) {
		t.Fatalf("got %v, want ErrNotMigrated", err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT 1`); err != nil {
		t.Fatalf("transaction unusable: %v", err)
	}
}

// TestInbox: the first record of a message id reports no repeat, a second
// one (after commit) a repeat; a rolled-back record is forgotten; the
// database/sql path agrees; bad input is refused.
func TestInbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := func(db outbox.DB, id string) bool {
		t.Helper()
		r, err := b.client.Inbox(b.ctx, db, "billing", id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Rolled back: forgotten.
	tx, _ := b.pool.Begin(b.ctx)
	if rec(tx, "1") {
		t.Fatal("first record reported a repeat")
	}
	tx.Rollback(b.ctx)
	if rec(b.pool, "1") {
		t.Fatal("record after a rollback reported a repeat")
	}
	if !rec(b.pool, "1") {
		t.Fatal("second record was not reported as a repeat")
	}
	if r, err := b.client.Inbox(b.ctx, b.pool, "shipping", "1"); err != nil || r {
		t.Fatalf("another consumer: repeat=%v %v, want a first delivery", r, err)
	}
	db := sql.OpenDB(stdlib.GetPoolConnector(b.pool))
	defer db.Close()
	if r, err := b.client.InboxSQL(b.ctx, db, "billing", "1"); err != nil || !r {
		t.Fatalf("InboxSQL repeat=%v %v, want a repeat", r, err)
	}
	for _, c := range [][2]string{{"", "1"}, {"billing", ""}, {"billing", "a\x00"}} {
		if _, err := b.client.Inbox(b.ctx, b.pool, c[0], c[1]); !errors.Is(err, outbox.ErrInvalidInbox) {
			t.Errorf("Inbox(%q, %q): %v, want ErrInvalidInbox", c[0], c[1], err)
		}
	}
}
