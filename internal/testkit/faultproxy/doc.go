// Package faultproxy is a TCP proxy for tests that need the network between
// Docket and PostgreSQL to fail: a connection reset, a server that refuses
// connections, or a network that silently stops delivering packets.
//
// # Use
//
// Point the proxy at the server and the code under test at the proxy:
//
//	p, err := faultproxy.New("127.0.0.1:5432")
//	if err != nil { ... }
//	t.Cleanup(p.Close)
//	// connect to p.Addr() instead of 127.0.0.1:5432
//
// The proxy listens on 127.0.0.1 only, on a port of its own, and forwards
// each connection it accepts to the target on a connection of its own.
//
// # Faults
//
//   - [Proxy.Cut] resets every current connection, on both sides, as a
//     restarted server or a middlebox that dropped its state would. New
//     connections work as before.
//   - [Proxy.Refuse] cuts the current connections and resets each new one as
//     soon as it is accepted: a client sees its connection reset, while
//     connecting or at its first read (the kernel completes the TCP
//     handshake before the proxy can say no), not "refused".
//   - [Proxy.Blackhole] stops all traffic without closing anything: bytes
//     already on their way are held by the proxy, not delivered, and new
//     connections are accepted but never reach the target. A client sees no
//     error until its own deadlines fire, as in a half-open network.
//   - [Proxy.CutAfter] aims a Cut at one statement: it reads PostgreSQL's
//     wire protocol and resets every connection right after the server ran
//     (or, for COPY, began) the next statement whose SQL matches, so the
//     client never learns how it ended.
//   - [Proxy.Delay] adds latency, base ± jitter, to every read in both
//     directions.
//   - [Proxy.Restore] forwards again. Connections that were open before the
//     blackhole resume, and the bytes held for them are delivered in order,
//     as when a network heals before TCP gives up. Connections accepted
//     during the blackhole never reached the target: they are reset.
//
// # What a blackhole does not simulate
//
// The proxy holds bytes in user space. The kernels at both ends still
// acknowledge every segment and answer TCP keepalive probes, so keepalive
// never fails through the proxy, and a TCP user timeout (TCP_USER_TIMEOUT)
// fires only once the proxy's receive window is full, that is when a client
// has more than a few hundred kilobytes to send. What a test observes
// through a blackhole is the client's own deadlines: connect timeouts,
// context deadlines, ping timeouts.
//
// # Lifetime
//
// [Proxy.Close] stops listening, resets every connection and returns when
// every goroutine the proxy started has ended.
package faultproxy
