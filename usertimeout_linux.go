//go:build linux

package docket

import (
	"os"
	"syscall"
	"time"
)

// tcpUserTimeout is TCP_USER_TIMEOUT from Linux's <linux/tcp.h>, the same
// on every architecture; package syscall names it on some of them only.
const tcpUserTimeout = 0x12

// userTimeoutControl returns a net.Dialer Control function that sets
// TCP_USER_TIMEOUT to d on TCP sockets, or nil when d is not positive.
func userTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	if d <= 0 {
		return nil
	}
	ms := max(int(d/time.Millisecond), 1)
	return func(network, _ string, c syscall.RawConn) error {
		if network != "tcp4" && network != "tcp6" {
			return nil // a unix socket has no retransmissions to bound
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, ms)
		}); err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt TCP_USER_TIMEOUT", serr)
	}
}
