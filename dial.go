package docket

import (
	"context"
	"net"
	"time"
)

// Keepalive and user-timeout defaults of a [Dialer]. Together they bound
// how long a connection whose peer vanished (a host that died, a network
// that drops everything) stays open: about 25 s, against the system's
// defaults of minutes.
const (
	// DefaultKeepAliveIdle is how long a connection is silent before the
	// first keepalive probe. The probes cost one small packet each and are
	// answered by the peer's kernel, so a busy server never fails them.
	DefaultKeepAliveIdle = 10 * time.Second

	// DefaultKeepAliveInterval is the time between unanswered probes.
	DefaultKeepAliveInterval = 5 * time.Second

	// DefaultKeepAliveCount is how many probes go unanswered before the
	// connection is closed: an idle connection to a dead peer fails after
	// 10 s + 3 × 5 s = 25 s.
	DefaultKeepAliveCount = 3

	// DefaultUserTimeout is how long sent data may stay unacknowledged
	// before the connection is closed (TCP_USER_TIMEOUT, Linux only). It
	// covers what keepalive does not: a connection that sent a statement
	// and waits for the answer is not idle, so without it the kernel
	// retransmits for about 15 minutes. It equals the keepalive bound,
	// 25 s, so both cases end alike; on Linux it also takes over from the
	// probe count for idle connections.
	DefaultUserTimeout = 25 * time.Second
)

// Dialer opens the TCP connections of pools made by [ParsePoolConfig], with
// keepalive probes and a TCP user timeout, so that a connection whose peer
// vanished fails within seconds. Its zero value uses the defaults above;
// its DialContext is a pgconn.DialFunc (ConnConfig.DialFunc).
//
// A connection whose server is slow is not affected: the server's kernel
// acknowledges data and answers probes while a statement runs. What ends
// early is a connection on which the server does not read what the client
// sends for DefaultUserTimeout, such as a COPY that streams rows into a
// table the server waits to lock: raise UserTimeout, or set it to -1, if
// your handlers do that.
type Dialer struct {
	// KeepAliveIdle is the silence before the first probe. 0 means
	// DefaultKeepAliveIdle; a negative value turns keepalive off.
	KeepAliveIdle time.Duration
	// KeepAliveInterval is the time between probes. 0 means
	// DefaultKeepAliveInterval.
	KeepAliveInterval time.Duration
	// KeepAliveCount is the number of unanswered probes that close the
	// connection. 0 means DefaultKeepAliveCount.
	KeepAliveCount int
	// UserTimeout is how long sent data may stay unacknowledged (Linux;
	// ignored elsewhere). 0 means DefaultUserTimeout; a negative value
	// leaves the system's setting (off unless configured).
	UserTimeout time.Duration
}

// DialContext connects to addr on network ("tcp" or "unix"), as
// net.Dialer.DialContext does, with d's keepalive and user timeout on TCP
// connections. It has no timeout of its own: pgx bounds the whole
// connection attempt by ConnConfig.ConnectTimeout through ctx.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := net.Dialer{Control: userTimeoutControl(or(d.UserTimeout, DefaultUserTimeout))}
	if d.KeepAliveIdle < 0 {
		nd.KeepAlive = -1
	} else {
		nd.KeepAliveConfig = net.KeepAliveConfig{
			Enable:   true,
			Idle:     or(d.KeepAliveIdle, DefaultKeepAliveIdle),
			Interval: or(d.KeepAliveInterval, DefaultKeepAliveInterval),
			Count:    or(d.KeepAliveCount, DefaultKeepAliveCount),
		}
	}
	return nd.DialContext(ctx, network, addr)
}

// or returns v, or def when v is zero.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
