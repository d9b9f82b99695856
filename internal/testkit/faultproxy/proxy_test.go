package faultproxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/faultproxy"
)

// quiet is how long a test waits to conclude that nothing arrives.
const quiet = 300 * time.Millisecond

// target is a TCP server on 127.0.0.1 for the proxy to forward to. Its
// connections echo what they receive when echo is set; otherwise the test
// takes them from conns and talks itself.
type target struct {
	ln       net.Listener
	echo     bool
	accepted atomic.Int64
	conns    chan net.Conn

	mu   sync.Mutex
	open []net.Conn
	wg   sync.WaitGroup
}

func newTarget(t *testing.T, echo bool) *target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &target{ln: ln, echo: echo, conns: make(chan net.Conn, 16)}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *target) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.open = append(s.open, c)
		s.mu.Unlock()
		if !s.echo {
			s.conns <- c
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_, _ = io.Copy(c, c)
			_ = c.Close()
		}()
	}
}

func (s *target) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.open {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// next returns the next connection the target accepted.
func (s *target) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("the target accepted no connection within 5s")
		return nil
	}
}

func newProxy(t *testing.T, s *target) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func dial(t *testing.T, p *faultproxy.Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// expect reads exactly want from c within 5s.
func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %q: got %q, %v", want, got, err)
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// expectNothing checks that c receives nothing, and is not closed, for
// the quiet period.
func expectNothing(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %q, %v; want nothing until the deadline", buf[:n], err)
	}
}

// expectReset checks that c is reset within 5s: a read fails with
// ECONNRESET, not a timeout and not an orderly end of stream.
func expectReset(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	n, err := c.Read(make([]byte, 64))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %d bytes, %v after %s; want connection reset", n, err, time.Since(start))
	}
}

// eventually polls cond until it holds, failing the test after 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestForward(t *testing.T) {
	t.Parallel()
	s := newTarget(t, true)
	p := newProxy(t, s)
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want 127.0.0.1:port", p.Addr())
	}
	c := dial(t, p)
	write(t, c, "hello")
	expect(t, c, "hello")
	if p.Accepted() != 1 || p.Open() != 1 {
		t.Errorf("Accepted() = %d, Open() = %d; want 1, 1", p.Accepted(), p.Open())
	}
	// An end of stream goes through as a half close: the echo still
	// answers, then closes, and the proxy lets the connection go.
	write(t, c, "bye")
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(c)
	if err != nil || string(rest) != "bye" {
		t.Fatalf("after half close: read %q, %v; want \"bye\" then end of stream", rest, err)
	}
	eventually(t, "Open() is not 0 after both sides closed", func() bool { return p.Open() == 0 })
}

func TestCut(t *testing.T) {
	t.Parallel()
	s := newTarget(t, false)
	p := newProxy(t, s)
	a, b := dial(t, p), dial(t, p)
	sa, sb := s.next(t), s.next(t)

	p.Cut()
	for _, c := range []net.Conn{a, b, sa, sb} {
		expectReset(t, c)
	}
	if p.Open() != 0 {
		t.Errorf("Open() = %d after Cut, want 0", p.Open())
	}

	// The proxy still forwards new connections.
	c := dial(t, p)
	sc := s.next(t)
	write(t, c, "again")
	expect(t, sc, "again")
}

func TestRefuse(t *testing.T) {
	t.Parallel()
	s := newTarget(t, true)
	p := newProxy(t, s)
	old := dial(t, p)
	write(t, old, "x")
	expect(t, old, "x")

	p.Refuse()
	expectReset(t, old)
	for range 3 {
		// The kernel completes the handshake; the proxy resets at once,
		// sometimes before the client's connect has returned.
		c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
		if err != nil {
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("dial while refused: %v, want connection reset", err)
			}
			continue
		}
		expectReset(t, c)
		_ = c.Close()
	}
	if got := s.accepted.Load(); got != 1 {
		t.Errorf("the target accepted %d connections, want only the one before Refuse", got)
	}
	if got := p.Accepted(); got != 4 {
		t.Errorf("Accepted() = %d, want 4", got)
	}

	p.Restore()
	c := dial(t, p)
	write(t, c, "back")
	expect(t, c, "back")
}

func TestBlackholeHoldsBothWays(t *testing.T) {
	t.Parallel()
	s := newTarget(t, false)
	p := newProxy(t, s)
	c := dial(t, p)
	sc := s.next(t)
	write(t, c, "before")
	expect(t, sc, "before")

	p.Blackhole()
	write(t, c, "up")
	write(t, sc, "down")
	expectNothing(t, sc)
	expectNothing(t, c)
	if p.Open() != 1 {
		t.Errorf("Open() = %d during the blackhole, want 1", p.Open())
	}

	// The held bytes arrive after Restore, and the connection goes on.
	p.Restore()
	expect(t, sc, "up")
	expect(t, c, "down")
	write(t, c, "after")
	expect(t, sc, "after")
}

func TestBlackholeNewConnections(t *testing.T) {
	t.Parallel()
	s := newTarget(t, true)
	p := newProxy(t, s)

	p.Blackhole()
	held := dial(t, p)
	write(t, held, "anyone?")
	expectNothing(t, held)
	if s.accepted.Load() != 0 {
		t.Errorf("the target accepted %d connections during the blackhole, want 0", s.accepted.Load())
	}
	if p.Accepted() != 1 || p.Open() != 1 {
		t.Errorf("Accepted() = %d, Open() = %d; want 1, 1", p.Accepted(), p.Open())
	}

	// A connection accepted during the blackhole never reached the target:
	// Restore resets it. New connections are forwarded.
	p.Restore()
	expectReset(t, held)
	c := dial(t, p)
	write(t, c, "hello")
	expect(t, c, "hello")
}

func TestRefuseEndsBlackhole(t *testing.T) {
	t.Parallel()
	s := newTarget(t, true)
	p := newProxy(t, s)
	c := dial(t, p)
	write(t, c, "x")
	expect(t, c, "x")
	p.Blackhole()
	held := dial(t, p)

	p.Refuse()
	expectReset(t, c)
	expectReset(t, held)
	if p.Open() != 0 {
		t.Errorf("Open() = %d after Refuse, want 0", p.Open())
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	s := newTarget(t, true)
	p, err := faultproxy.New(s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	addr := p.Addr()
	// One connection in each state: forwarding, blackholed with bytes held,
	// and accepted during the blackhole.
	fwd := dial(t, p)
	write(t, fwd, "x")
	expect(t, fwd, "x")
	p.Blackhole()
	write(t, fwd, "held")
	held := dial(t, p)
	eventually(t, "the proxy did not accept the second connection", func() bool { return p.Open() == 2 })

	p.Close()
	expectReset(t, fwd)
	expectReset(t, held)
	if p.Open() != 0 {
		t.Errorf("Open() = %d after Close, want 0", p.Open())
	}
	eventually(t, "goroutines of the proxy outlived Close", func() bool { return proxyGoroutines(p) == "" })
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Errorf("dial %s after Close succeeded, want refused", addr)
	}
	p.Close() // a second Close does nothing
	p.Restore()
	p.Blackhole()
	p.Restore()
}

func TestNewInvalidTarget(t *testing.T) {
	t.Parallel()
	if p, err := faultproxy.New("no port"); err == nil {
		p.Close()
		t.Fatal("New with a target without a port succeeded")
	}
}

// proxyGoroutines returns the stacks of goroutines running methods of p,
// or "". Other tests' proxies are left out: a stack shows the receiver's
// address as the first argument.
func proxyGoroutines(p *faultproxy.Proxy) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	receiver := fmt.Sprintf("(%p", p)
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "internal/testkit/faultproxy.(*Proxy).") && strings.Contains(g, receiver) {
			found = append(found, g)
		}
	}
	return strings.Join(found, "\n\n")
}
