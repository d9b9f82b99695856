package queue

import "context"

// sqlNotifyQueues announces queues on a notify channel, in the format
// enqueue uses (payload = queue name), one NOTIFY per entry.
const sqlNotifyQueues = `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`

// NotifyQueues announces queues on channel (outbox.Client.NotifyChannel),
// so that the workers that serve them claim now rather than at their next
// poll. A queue listed twice is announced twice.
func (q *Queue) NotifyQueues(ctx context.Context, db DB, channel string, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, sqlNotifyQueues, channel, queues)
	return err
}
