package core

import "time"

// KindOpts are the options a kind is registered with; package handlers
// names them and documents each field. Queue, Priority and MaxAttempts are
// enqueue defaults; Timeout and Backoff apply to every run of the kind.
type KindOpts struct {
	Queue       string
	Priority    int
	MaxAttempts int
	Timeout     time.Duration
	Backoff     func(attempt int) time.Duration
}
