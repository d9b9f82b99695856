// Package worker is Docket's worker engine: it claims jobs, runs their
// handlers and records their outcomes. docket.NewClient builds it from a
// handler registry and docket.WorkerConfig; docs/worker.md describes its
// behaviour for users.
//
// # Layout
//
// Each of the worker's duties beside running handlers (reaping, promoting,
// partitions) is a small service with its own
// goroutine, timer and error logging (reaper.go, promoter.go,
// partitions.go), as are the heartbeat and its lease watchdog
// (heartbeat.go), the LISTEN connection (notify.go), the worker's row in
// docket_workers (presence.go), and the paused queues and limits
// (pauses.go, limits.go), both read by one poll reader (polled.go). They share
// one lifecycle (service.go): Start starts them in order before the pools
// claim, Stop stops them in reverse order once every outcome is written.
// Every outcome — plain handlers' batches, transactional handlers'
// completions in their own transaction, and outcome hooks — is written by
// one writer (finish.go), which is also the one place that creates a
// history partition a transaction found missing.
//
// The SQL it runs is the worker protocol of package queue, one file per
// behaviour; the engine decides when to run which statement.
package worker
