package relay

// Floor returns the id from which r fetches (see floor.go); 0 while it has
// no floor.
func Floor(r *Relay) int64 { return r.floorSeen.Load() }
