package faultproxy

// Cut resets every current connection on both sides (an RST to the client
// and to the target). The mode is unchanged: after Cut in normal mode, new
// connections are forwarded as before.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAllLocked(func(*link) bool { return true })
}

// Refuse cuts every current connection and, until [Proxy.Restore] or
// [Proxy.Blackhole], resets each new connection as soon as it is accepted.
// Calling it again cuts whatever connections remain.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endBlackholeLocked()
	p.mode = refuse
	p.cutAllLocked(func(*link) bool { return true })
}

// Blackhole stops all traffic without closing anything, until
// [Proxy.Restore] or [Proxy.Refuse]: bytes on current connections are held
// in both directions, and new connections are accepted but never forwarded.
// Calling it while blackholed does nothing.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == blackhole || p.closed {
		return
	}
	p.mode = blackhole
	p.resume = make(chan struct{})
}

// Restore returns to normal forwarding. After a blackhole, the connections
// that were open before it resume and the bytes held for them are delivered
// in order; the connections accepted during it never reached the target and
// are reset. After Refuse, new connections are forwarded again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endBlackholeLocked() {
		p.cutAllLocked(func(l *link) bool { return l.held })
	}
	p.mode = forward
}

// endBlackholeLocked wakes the connections a blackhole holds, if there is
// one, and reports whether there was.
func (p *Proxy) endBlackholeLocked() bool {
	if p.mode != blackhole {
		return false
	}
	close(p.resume)
	p.mode = forward
	return true
}
