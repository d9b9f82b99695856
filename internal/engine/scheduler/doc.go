// Package scheduler is the engine of recurring schedules: it registers
// them, writes each run's successor in the transaction of the run's
// outcome (Hook), skips runs that are paused, removed or late (Middleware),
// restores lost runs (Start runs the reconciler), and runs the operations
// package admin offers. docket.NewClient wires it into the worker; package
// schedule names its types for users.
package scheduler
