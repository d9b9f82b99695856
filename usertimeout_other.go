//go:build !linux

package docket

import (
	"syscall"
	"time"
)

// userTimeoutControl returns nil: TCP_USER_TIMEOUT is Linux's. Elsewhere a
// connection waiting for an answer from a dead peer ends when the system
// gives up retransmitting.
func userTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
