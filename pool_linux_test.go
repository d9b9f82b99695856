package docket_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket"
)

// TestUserTimeoutEndsBlackholedConnection: a connection whose data is no
// longer acknowledged fails after the TCP user timeout, not at the end of
// its statement's deadline.
//
// Through the fault proxy, the proxy's kernel acknowledges what it can
// buffer, so a blackholed connection is seen only once that buffer is
// full: the statement here is larger than the socket buffers, and the
// kernel's zero-window probes stand in for the retransmissions of a real
// dead network. Both are bounded by TCP_USER_TIMEOUT.
func TestUserTimeoutEndsBlackholedConnection(t *testing.T) {
	t.Parallel()
	big := "SELECT length('" + strings.Repeat("x", 32<<20) + "')"
	for _, tc := range []struct {
		name        string
		userTimeout time.Duration
	}{
		{"user timeout 1s", time.Second},
		{"no user timeout", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, url := proxied(t)
			cfg, err := docket.ParsePoolConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.DialFunc = docket.Dialer{UserTimeout: tc.userTimeout}.DialContext
			pool := newPool(t, p, cfg)
			conn, err := pool.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()

			p.Blackhole()
			// Without a user timeout the statement runs into this deadline.
			// With one, the kernel ends the connection first: filling the
			// socket buffers takes a while on a loaded machine, then the
			// timeout counts, and the system's own retransmission limit is
			// many minutes away, so ETIMEDOUT within the deadline can only
			// be the user timeout's doing.
			deadline := 6 * time.Second
			if tc.userTimeout > 0 {
				deadline = 20 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			_, err = conn.Conn().PgConn().Exec(ctx, big).ReadAll()
			took := time.Since(start)
			if tc.userTimeout < 0 {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("statement through the blackhole: %v after %s, want the statement's deadline", err, took)
				}
			} else {
				// The kernel ended the connection: the call that sees it
				// first gets ETIMEDOUT, a write after it EPIPE.
				if !errors.Is(err, syscall.ETIMEDOUT) && !errors.Is(err, syscall.EPIPE) {
					t.Fatalf("statement through the blackhole: %v after %s, want the connection timed out", err, took)
				}
				t.Logf("the user timeout of %s ended the connection after %s", tc.userTimeout, took)
			}
			if !conn.Conn().IsClosed() {
				t.Error("the connection is still open")
			}
		})
	}
}

// TestDialerSocketOptions: the dialed socket carries the keepalive and user
// timeout settings. Keepalive itself cannot be seen failing on loopback (the
// kernel answers every probe), so this reads them back from the kernel.
func TestDialerSocketOptions(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name                string
		d                   docket.Dialer
		keepAlive           int
		idle, interval, cnt int
		userTimeoutMillis   int
	}{
		{"defaults", docket.Dialer{}, 1, 10, 5, 3, 25000},
		{"own values", docket.Dialer{KeepAliveIdle: 2 * time.Second, KeepAliveInterval: time.Second, KeepAliveCount: 4, UserTimeout: 1500 * time.Millisecond}, 1, 2, 1, 4, 1500},
		{"off", docket.Dialer{KeepAliveIdle: -1, UserTimeout: -1}, 0, -1, -1, -1, 0},
	} {
		c, err := tc.d.DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := sockopts(t, c.(*net.TCPConn))
		_ = c.Close()
		want := map[string]int{"SO_KEEPALIVE": tc.keepAlive, "TCP_USER_TIMEOUT": tc.userTimeoutMillis}
		if tc.keepAlive == 1 {
			want["TCP_KEEPIDLE"], want["TCP_KEEPINTVL"], want["TCP_KEEPCNT"] = tc.idle, tc.interval, tc.cnt
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %d, want %d", tc.name, k, got[k], v)
			}
		}
	}
}

func sockopts(t *testing.T, c *net.TCPConn) map[string]int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string][2]int{
		"SO_KEEPALIVE":     {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
		"TCP_KEEPIDLE":     {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
		"TCP_KEEPINTVL":    {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
		"TCP_KEEPCNT":      {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
		"TCP_USER_TIMEOUT": {syscall.IPPROTO_TCP, 0x12},
	}
	got := map[string]int{}
	err = raw.Control(func(fd uintptr) {
		for name, o := range opts {
			v, err := syscall.GetsockoptInt(int(fd), o[0], o[1])
			if err != nil {
				t.Errorf("getsockopt %s: %v", name, err)
			}
			got[name] = v
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDialerUnixSocket: a unix-domain socket dials as before; the TCP
// settings do not apply to it.
func TestDialerUnixSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := docket.Dialer{}.DialContext(context.Background(), "unix", path)
	if err != nil {
		t.Fatalf("dial a unix socket: %v", err)
	}
	_ = c.Close()
}
