package faultproxy

import (
	"errors"
	"io"
	"net"
)

// link is one proxied connection: the client's, and the proxy's own to the
// target. Its fields but done are guarded by Proxy.mu.
type link struct {
	client net.Conn
	server net.Conn // nil while dialing, and for ever when held
	held   bool     // accepted during a blackhole, never dialed
	pipes  int      // copying directions still running
	done   chan struct{}
	wire   *wire // what each side says, for CutAfter
}

func (l *link) isDone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// pipe copies src to dst until either side ends, holding the bytes while
// the proxy is blackholed. An end of stream is passed on as a half close, so
// a peer that stops sending can still receive; an error resets the link.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if !p.pass(l) {
			return
		}
		if n > 0 && !p.delay(l) {
			return
		}
		if n > 0 && l.wire.read(src == l.client, buf[:n]) {
			p.Cut() // instead of the bytes that would tell the client
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				p.cut(l)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			p.halfClose(l, dst)
			return
		}
		if err != nil {
			p.cut(l)
			return
		}
	}
}

// halfClose passes an end of stream on to dst, and closes the link once
// both directions have ended.
func (p *Proxy) halfClose(l *link, dst net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.isDone() {
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	if l.pipes--; l.pipes > 0 {
		return
	}
	delete(p.links, l)
	_ = l.client.Close()
	_ = l.server.Close()
	close(l.done)
}

// cut resets both sides of l.
func (p *Proxy) cut(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLocked(l)
}

func (p *Proxy) cutLocked(l *link) {
	if l.isDone() {
		return
	}
	delete(p.links, l)
	reset(l.client)
	if l.server != nil {
		reset(l.server)
	}
	close(l.done)
}

// cutAllLocked cuts the links for which which returns true.
func (p *Proxy) cutAllLocked(which func(*link) bool) {
	for l := range p.links {
		if which(l) {
			p.cutLocked(l)
		}
	}
}

// reset closes c with an RST rather than a FIN, so that its peer sees
// "connection reset" at once instead of an orderly end of stream.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
