package relay

import "time"

// Refused events wait before their next attempt.
//
// A refusal is permanent by its error (see Permanent), but a broker can
// give such an error for a while and then stop: a RabbitMQ node restarted
// under load returns messages as unroutable, or answers that an exchange
// does not exist, until it has recovered its queues and bindings; a
// stream is being recreated by a deploy. Tried again at once, an event
// would spend its MaxAttempts within milliseconds and become a dead
// letter that blocks its key until an operator replays it. So a relay
// holds a refused event, with the later events of its key, back from its
// fetches until the next attempt is due: RefusalBackoff after the first
// refusal, four times as long after each further one, at most
// maxRefusalHold. The other keys go on meanwhile.
//
// Holds live in the relay's memory only. A relay that restarts, or another
// relay that takes the partition over, tries at once: an attempt earlier
// than planned, never one lost. A held event's id is passed to the fetch
// as in flight, which also keeps the floor (see floor.go) at or below it,
// so the event and its key's later events (whose ids are higher: a key's
// events commit in id order) are fetched again once the hold ends.

// maxRefusalHold bounds the wait between two attempts of a refused event.
const maxRefusalHold = time.Minute

// hold is a refused event's wait: its key ("" for none) and when its next
// attempt is due.
type hold struct {
	key string
	due time.Time
}

// refusalHold is how long an event waits after its attempts-th refusal.
func (r *Relay) refusalHold(attempts int) time.Duration {
	d := r.cfg.RefusalBackoff
	for i := 1; i < attempts && d < maxRefusalHold; i++ {
		d *= 4
	}
	return min(d, maxRefusalHold)
}

// holdBack records that event id of key, refused for the attempts-th
// time at now, waits before its next attempt.
func (r *Relay) holdBack(id int64, key string, attempts int, now time.Time) {
	if r.holds == nil {
		r.holds = map[int64]hold{}
	}
	r.holds[id] = hold{key: key, due: now.Add(r.refusalHold(attempts))}
}

// held returns the events and keys held back at now, dropping the holds
// that ended.
func (r *Relay) held(now time.Time) (ids []int64, keys []string) {
	ids, keys = []int64{}, []string{}
	for id, h := range r.holds {
		if !now.Before(h.due) {
			delete(r.holds, id)
			continue
		}
		ids = append(ids, id)
		if h.key != "" {
			keys = append(keys, h.key)
		}
	}
	return ids, keys
}
