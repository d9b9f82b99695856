package pgsql

import (
	"sync"
	"time"
)

// Debounce spaces out the NOTIFYs a process sends for one key (a queue, or
// the events channel) to at least Window apart, so that NOTIFY's
// commit-time lock never caps the rate of enqueue or publish. Window -1
// sends none. The zero value announces every time; it is safe for
// concurrent use.
type Debounce struct {
	Window time.Duration

	mu   sync.Mutex
	last map[string]time.Time
}

// Take reserves the announcement of key at now when its last one is older
// than the window; it returns the time it replaced, for GiveBack.
// Reserving before the write keeps concurrent writers from all announcing
// the same key.
func (d *Debounce) Take(key string, now time.Time) (time.Time, bool) {
	if d.Window < 0 {
		return time.Time{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.last[key]
	if now.Sub(prev) < d.Window {
		return prev, false
	}
	if d.last == nil {
		d.last = map[string]time.Time{}
	}
	d.last[key] = now
	return prev, true
}

// GiveBack undoes Take when nothing was announced after all (nothing
// became ready, or the write failed), unless another writer has reserved
// the key since.
func (d *Debounce) GiveBack(key string, reserved, prev time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last[key].Equal(reserved) {
		d.last[key] = prev
	}
}
