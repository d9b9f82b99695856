package worker

import (
	"context"
	"log/slog"
)

// pauses is the set of queues an operator paused (docket_queues), read
// before Start returns and then every poll interval; pools leave paused
// queues out of their claims, and a resumed queue's pools claim at once.
type pauses struct {
	*polled[map[string]bool]
}

func newPauses(up upkeep) *pauses {
	read := func(ctx context.Context) (*map[string]bool, error) {
		names, err := up.q.PausedQueues(ctx, up.db)
		if err != nil {
			return nil, err
		}
		set := make(map[string]bool, len(names))
		for _, q := range names {
			set[q] = true
		}
		return &set, nil
	}
	return &pauses{newPolled(up, "paused queues", &map[string]bool{}, read, func(old, now *map[string]bool) {
		var resumed []string
		for q := range *old {
			if !(*now)[q] {
				resumed = append(resumed, q)
				up.log.Info("queue resumed", slog.String("queue", q))
			}
		}
		for q := range *now {
			if !(*old)[q] {
				up.log.Info("queue paused: not claiming from it", slog.String("queue", q))
			}
		}
		up.wakeQueues(resumed)
	})}
}

// active returns the queues that are not paused, in order.
func (p *pauses) active(queues []string) []string {
	paused := *p.load()
	if len(paused) == 0 {
		return queues
	}
	out := make([]string, 0, len(queues))
	for _, q := range queues {
		if !paused[q] {
			out = append(out, q)
		}
	}
	return out
}
