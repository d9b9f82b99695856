package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
)

// ErrInvalidInbox is returned by Inbox for an empty or oversized consumer
// name or message id, before anything is sent.
var ErrInvalidInbox = errors.New("docket: invalid inbox entry")

// Inbox records that consumer received the message with id, in db, which
// should be the transaction in which the consumer applies the message's
// effects. It returns true when the message was recorded before (by a
// committed transaction): a repeat delivery, whose effects must be skipped.
// Committing the transaction makes the effects and the record one; rolling
// it back forgets both, so the redelivered message is processed again.
//
// Two transactions recording the same id at once are serialized by the
// inbox's primary key: the second waits until the first ends, then sees a
// repeat (first committed) or records the message itself (first rolled
// back).
//
// consumer names the consuming service or handler, so that several
// consumers of one message each process it once; it must be 1 to
// docket.MaxNameLen bytes of valid UTF-8. id is the message id the broker
// delivered (the relay sets it to the event's id), 1 to docket.MaxKeyLen bytes.
func (c *Client) Inbox(ctx context.Context, db DB, consumer, id string) (repeat bool, err error) {
	return c.inbox(ctx, pgsql.OnPgx(db), consumer, id)
}

// InboxSQL is Inbox through database/sql: pass the *sql.Tx that applies the
// message's effects.
func (c *Client) InboxSQL(ctx context.Context, db SQLDB, consumer, id string) (repeat bool, err error) {
	return c.inbox(ctx, pgsql.OnSQL(db), consumer, id)
}

func (c *Client) inbox(ctx context.Context, cn pgsql.Conn, consumer, id string) (bool, error) {
	if consumer == "" || len(consumer) > core.MaxNameLen || core.BadText(consumer) != "" {
		return false, fmt.Errorf("%w: consumer name must be 1 to %d bytes of UTF-8 without NUL", ErrInvalidInbox, core.MaxNameLen)
	}
	if id == "" || len(id) > core.MaxKeyLen || core.BadText(id) != "" {
		return false, fmt.Errorf("%w: consumer %s: message id must be 1 to %d bytes of UTF-8 without NUL", ErrInvalidInbox, consumer, core.MaxKeyLen)
	}
	n, err := cn.Exec(ctx, sqlInbox.For(c.schema), consumer, id)
	if err != nil {
		return false, c.wrapErr(fmt.Errorf("docket: inbox of %s, message %s: %w", consumer, id, err))
	}
	return n == 0, nil
}

// PruneInbox deletes inbox entries received before cutoff and returns how
// many. Keep entries longer than the broker can redeliver a message (its
// de-duplication window, its redelivery limits): a repeat arriving after
// its entry was pruned is processed again.
func (c *Client) PruneInbox(ctx context.Context, db DB, cutoff time.Time) (int64, error) {
	tag, err := db.Exec(ctx, sqlInboxPrune.For(c.schema), cutoff)
	return tag.RowsAffected(), c.wrapErr(err)
}

var (
	sqlInbox = pgsql.SQL(`INSERT INTO {{schema}}.docket_inbox (consumer, message_id) VALUES ($1, $2)
ON CONFLICT (consumer, message_id) DO NOTHING`)

	sqlInboxPrune = pgsql.SQL(`DELETE FROM {{schema}}.docket_inbox WHERE received_at < $1`)
)
