package relay

import "time"

// Floor returns the id from which r fetches (see floor.go); 0 while it has
// no floor.
func Floor(r *Relay) int64 { return r.floorSeen.Load() }

// RefusalHold returns how long r holds an event back after its
// attempts-th refusal (see retry.go).
func RefusalHold(r *Relay, attempts int) time.Duration { return r.refusalHold(attempts) }

// MaxAttempts returns r's MaxAttempts, its default filled in.
func MaxAttempts(r *Relay) int { return r.cfg.MaxAttempts }
