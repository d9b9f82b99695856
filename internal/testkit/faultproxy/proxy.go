package faultproxy

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds the proxy's own connection to the target, so that a
// target that is down ends the client's connection instead of holding it.
const dialTimeout = 5 * time.Second

// mode is what the proxy does with traffic; see the package doc.
type mode int

const (
	forward mode = iota
	refuse
	blackhole
)

// Proxy forwards TCP connections from a loopback port to a target and
// injects faults on demand. Create it with [New]; its methods are safe for
// concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by Close: ends dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started

	accepted atomic.Int64

	mu     sync.Mutex
	mode   mode
	resume chan struct{} // closed when the current blackhole ends
	links  map[*link]struct{}
	closed bool

	latency latency       // added to every read; see Delay
	armed   *statementCut // see CutAfter
}

// New starts a proxy that listens on 127.0.0.1 on a free port and forwards
// every connection it accepts to target, a host:port. It returns an error
// if target is not a host:port or the proxy cannot listen. Stop it with
// [Proxy.Close].
func New(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the address clients connect to, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted returns how many connections the proxy has accepted since New,
// including those it reset at once (Refuse) or held (Blackhole).
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Open returns how many client connections the proxy holds open now:
// forwarded, being connected to the target, or held by a blackhole.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, resets every connection and waits for every
// goroutine the proxy started to end. Calling it again does nothing.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.endBlackholeLocked()
		p.mode = refuse
		p.cutAllLocked(func(*link) bool { return true })
	}
	p.mu.Unlock()
	p.cancel()
	_ = p.ln.Close() // a second Close only reports that it is closed
	p.wg.Wait()
}

// serve accepts connections until Close.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			// After Close this is the closed listener. Anything else (such
			// as running out of file descriptors) may pass: retry, slowly
			// enough not to spin.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.accepted.Add(1)
		p.admit(c)
	}
}

// admit decides what becomes of an accepted connection in the current mode.
func (p *Proxy) admit(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == refuse {
		reset(c)
		return
	}
	l := &link{client: c, done: make(chan struct{}), wire: newWire(p)}
	p.links[l] = struct{}{}
	if p.mode == blackhole {
		l.held = true // never dialed: the client waits for nothing
		return
	}
	p.wg.Add(1)
	go p.connect(l)
}

// connect dials the target for l and starts copying both ways.
func (p *Proxy) connect(l *link) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: dialTimeout}
	s, err := d.DialContext(p.ctx, "tcp", p.target)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.cutLocked(l)
		return
	}
	if l.isDone() { // cut while dialing
		reset(s)
		return
	}
	l.server = s
	l.pipes = 2
	p.wg.Add(2)
	go p.pipe(l, s, l.client)
	go p.pipe(l, l.client, s)
}

// pass waits while the proxy is blackholed. It reports whether l is still
// open and its bytes may go on.
func (p *Proxy) pass(l *link) bool {
	for {
		p.mu.Lock()
		m, resume := p.mode, p.resume
		p.mu.Unlock()
		if m != blackhole {
			return !l.isDone()
		}
		select {
		case <-resume:
		case <-l.done:
			return false
		}
	}
}
