package ent

import (
	"context"
	"fmt"

	entgo "entgo.io/ent"
	"github.com/docketq/docket"
	"github.com/docketq/docket/outbox"
)

// EventPublisher writes events through database/sql: *outbox.Client.
type EventPublisher interface {
	PublishSQL(ctx context.Context, db docket.SQLDB, m outbox.Message) (outbox.Published, error)
}

// Publish writes one event inside the Ent transaction tx: the relay
// delivers it once tx commits, never if it rolls back. It behaves as
// outbox.Client.Publish: an invalid message returns an
// outbox.ErrInvalidEvent error before anything is sent, so tx stays usable.
func Publish(ctx context.Context, c EventPublisher, tx Tx, m outbox.Message) (outbox.Published, error) {
	if tx == nil {
		return outbox.Published{}, ErrNilTx
	}
	return c.PublishSQL(ctx, tx, m)
}

// EventsFunc returns the events to publish for a mutation that has
// succeeded, as JobsFunc does for jobs. Returning none publishes nothing;
// an error fails the mutation, and the caller should roll back.
type EventsFunc[M any] func(ctx context.Context, m M, v entgo.Value) ([]outbox.Message, error)

// PublishHook returns an ent.Hook that publishes the events of events in
// the same transaction as the mutation it is attached to, through c. As
// with Hook, outside a transaction it returns an error wrapping ErrNoTx
// before the mutation runs, so neither the row nor an event is written.
func PublishHook[M TxMutation[T], T Tx](c EventPublisher, events EventsFunc[M]) entgo.Hook {
	return txHook(events, func(ctx context.Context, tx T, m entgo.Mutation, msg outbox.Message) error {
		if _, err := c.PublishSQL(ctx, tx, msg); err != nil {
			return fmt.Errorf("docket: %s %s: publish to %s: %w", m.Op(), m.Type(), msg.Topic, err)
		}
		return nil
	})
}
