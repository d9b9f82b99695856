// Package queue is the worker protocol over Docket's tables: the statements
// a worker process runs on the jobs it serves. Claim takes ready jobs and
// leases them to a worker; Heartbeat keeps the leases; Complete, Fail,
// Snooze, DeadLetter and Release record each run's outcome; Reap hands back
// jobs whose worker stopped heartbeating; Promote makes scheduled jobs
// ready; the worker registry, the history partitions and the NOTIFYs that
// wake other workers are kept here too. Package handlers drives it; the
// tables and the public operations (enqueue, status, dead-letter triage)
// are package outbox's.
//
// Each file holds one behaviour with the SQL it runs: claim.go (claims and
// the tenant cap), cursor.go (claim cursors and straggler sweeps), lease.go
// (runs and heartbeats), finish.go (every outcome), reap.go, promote.go,
// presence.go (worker registration), partitions.go (history partitions) and
// notify.go. {{schema}} in that SQL is replaced by the queue's quoted schema
// when the Queue is created. Statements run with the settings of
// internal/pgsql.Run.
//
// # Claims
//
// Claim, Heartbeat, Complete, Fail, Snooze, DeadLetter, Release, Reap and
// Promote are each one statement over many jobs. Claim locks rows with
// FOR NO KEY UPDATE SKIP LOCKED, so concurrent claimers never wait on each
// other and never take the same job. Jobs with a future run_at (first run,
// retry backoff, snooze) are in state scheduled and invisible to Claim until
// Promote makes them ready.
//
// Inside a queue, Claim takes higher priorities first and, within a
// priority, jobs in the order they became ready: each job draws a fresh
// ready_seq whenever it becomes ready. A Queue claims each (queue,
// priority) from a cursor over ready_seq, so claimed jobs that vacuum cannot
// remove yet — because some long transaction elsewhere holds back the
// horizon — are never visited again; see cursor.go for how jobs from
// late-committing transactions are still found.
//
// # Fencing
//
// Statements on a worker's running jobs (heartbeat and every outcome) are
// fenced by the claim they speak for: they match a job's id together with
// the claim_id its claim wrote (one number per claim statement, from
// docket_claims_seq), and locked_by = worker. A run that lost its lease
// changes nothing, even when the same process has claimed the job again
// since: that claim wrote a new claim_id. A check constraint keeps locked_by
// set exactly while a job runs, so state need not be matched; leaving it out
// keeps these statements on the primary key instead of the running-jobs
// index, whose dead entries pile up while a long transaction holds back
// vacuum.
//
// Heartbeat, complete and release take the claims as a JSON object from
// job id to claim id (runClaims) and read the table by id = ANY($1) alone,
// in primary-key order, with the claim as a filter: a join with the runs
// instead let cached generic plans rescan the runs for every row (seconds
// for a batch of thousands) or lock rows out of key order (deadlocks between
// concurrent batches). The outcomes that carry a value per job (fail,
// snooze, dead-letter) still join with their rows.
package queue
