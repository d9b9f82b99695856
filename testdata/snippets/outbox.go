// The declarations docs/outbox.md's Go blocks assume: the service's pool and
// Docket client, an event's key and body, and a consumer's JetStream
// message and effects.
package snippet

import (
	"context"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	ctx     context.Context
	pool    *pgxpool.Pool
	client  *docket.Client
	orderID string
	body    []byte
	msg     jetstream.Msg
)

func applyEffects(ctx context.Context, tx pgx.Tx, msg jetstream.Msg) error { return nil }
