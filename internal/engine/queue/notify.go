package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// NotifyQueues announces queues on channel (outbox.Client.NotifyChannel),
// so that the workers that serve them claim now rather than at their next
// poll. A queue listed twice is announced twice.
func (q *Queue) NotifyQueues(ctx context.Context, db DB, channel string, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, pgsql.NotifyQueues, channel, pgsql.QueueList(queues))
	return q.wrapErr(err)
}
