package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/docketq/docket/admin"
)

// throughputPoint is one minute of the overview's chart.
type throughputPoint struct {
	T         int64 `json:"t"` // Unix seconds of the minute's start
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"` // retries spent plus jobs dead-lettered
}

// settle is how long after a minute ends its counts are taken as final: a
// job's finished or dead time is its outcome transaction's, committed a
// moment later.
const settle = 2 * time.Minute

// minutes keeps the chart's counts of the minutes that have settled. Every
// open overview asks for the last hour every 10 seconds; on a busy system
// that hour is 100,000 history rows counted again each time, where only the
// last minutes can still change. A dead job replayed or purged later stays
// counted in the minute it died, as a failure that happened.
type minutes struct {
	mu sync.Mutex
	// final holds the settled minutes from its oldest up to through
	// (excluded), by Unix second; a minute absent from it had nothing.
	final   map[int64]admin.MinuteStat
	from    time.Time // the oldest minute final covers
	through time.Time // zero: nothing cached
}

// read returns the counts per minute since since, asking the database only
// for the minutes not settled in the cache.
func (m *minutes) read(ctx context.Context, since, now time.Time, query func(context.Context, time.Time) ([]admin.MinuteStat, error)) (map[int64]admin.MinuteStat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ask := since
	if !m.through.IsZero() && !m.from.After(since) && m.through.After(since) {
		ask = m.through
	} else {
		m.final, m.from, m.through = map[int64]admin.MinuteStat{}, since, time.Time{}
	}
	stats, err := query(ctx, ask)
	if err != nil {
		return nil, err
	}
	settled := now.Add(-settle).Truncate(time.Minute)
	out := make(map[int64]admin.MinuteStat, 60)
	for k, v := range m.final {
		if k < since.Unix() {
			delete(m.final, k)
			continue
		}
		out[k] = v
	}
	for _, s := range stats {
		out[s.Minute.Unix()] = s
		if s.Minute.Before(settled) {
			m.final[s.Minute.Unix()] = s
		}
	}
	m.from = since
	if settled.After(ask) {
		m.through = settled
	} else if m.through.IsZero() {
		m.through = ask
	}
	return out, nil
}

// throughput serves the last hour per minute as JSON for the chart, every
// minute present (zero when nothing finished).
func (d *dash) throughput(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	end := now.Truncate(time.Minute)
	since := end.Add(-59 * time.Minute)
	by, err := d.minutes.read(r.Context(), since, now, func(ctx context.Context, from time.Time) ([]admin.MinuteStat, error) {
		return d.ops.Throughput(ctx, d.pool, from)
	})
	if err != nil {
		d.internal(w, r, "reading throughput", err)
		return
	}
	points := make([]throughputPoint, 0, 60)
	for t := since; !t.After(end); t = t.Add(time.Minute) {
		m := by[t.Unix()]
		points = append(points, throughputPoint{T: t.Unix(), Completed: m.Completed, Failed: m.Retries + m.Dead})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(points)
}
