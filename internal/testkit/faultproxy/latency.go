package faultproxy

import (
	"math/rand/v2"
	"time"
)

// latency is the delay [Proxy.Delay] set; a zero base means none.
type latency struct{ base, jitter time.Duration }

// Delay makes every read the proxy forwards, in both directions, wait base
// ± jitter (drawn uniformly for each read) before it is passed on, until
// Delay(0, 0). It panics if base or jitter is negative or jitter exceeds
// base.
//
// A connection's bytes keep their order: its reads wait in turn, and bytes
// that arrive while earlier ones wait are read, and delayed, together
// afterwards. A request-and-answer protocol such as PostgreSQL's sees each
// round trip take about twice the delay; a stream that keeps sending is
// slowed to one read (up to 32 KiB) per delay.
func (p *Proxy) Delay(base, jitter time.Duration) {
	if base < 0 || jitter < 0 || jitter > base {
		panic("faultproxy: Delay wants 0 <= jitter <= base")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = latency{base, jitter}
}

// delay waits out the current latency for one read of l. It reports
// whether l is still open.
func (p *Proxy) delay(l *link) bool {
	p.mu.Lock()
	lat := p.latency
	p.mu.Unlock()
	if lat.base == 0 {
		return true
	}
	d := lat.base - lat.jitter + rand.N(2*lat.jitter+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}
