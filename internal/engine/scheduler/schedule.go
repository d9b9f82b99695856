package scheduler

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// Misfire says what happens to fire times that passed while no worker ran
// the schedule (workers down, a backlog, a run longer than the period).
type Misfire string

const (
	// Skip drops missed fire times: after an outage at most one late run
	// executes (the pending run, if it starts within the grace period of
	// its time; a later start completes it without calling the handler,
	// through the middleware docket.NewClient adds), and the next run is at
	// the first fire time still ahead, on the schedule's grid. The zero
	// value of Misfire means Skip.
	Skip Misfire = "skip"
	// RunOnce catches up with a single run for any number of missed fire
	// times, however late it starts, then continues at the first fire time
	// still ahead.
	RunOnce Misfire = "run_once"
	// CatchUp runs every missed fire time, oldest first and one at a time
	// (a schedule has one pending run at most), until the schedule is back
	// on time. Each run carries its own fire time (meta MetaFire), so a
	// handler that processes the period ending at its fire time misses
	// none. After a long outage of a frequent schedule that is many runs in
	// a row: a day of "@every 1m" is 1,440.
	CatchUp Misfire = "catch_up"
)

// MetaSchedule and MetaFire are the meta keys of a schedule run's job: the
// schedule's name, and the fire time (RFC 3339, UTC) the run is for. A run
// enqueued by Trigger has MetaSchedule and MetaTrigger but no MetaFire.
const (
	MetaSchedule = "schedule"
	MetaFire     = "fire"
	MetaTrigger  = "trigger"
)

// KeyPrefix prefixes a schedule's name in the unique key of its pending run.
const KeyPrefix = "schedule:"

// Schedule is a recurring job: its name, when it fires and the job each
// run enqueues. Register writes it; the zero values of the optional fields
// mean the documented defaults.
type Schedule struct {
	// Name identifies the schedule and keys its pending run
	// ("schedule:<name>"). Required; at most docket.MaxKeyLen-9 bytes, no
	// spaces or control characters.
	Name string
	// Spec is the cron spec: 5 fields, 6 with leading seconds, a descriptor
	// (@hourly, @every 10m), optionally prefixed by CRON_TZ=<zone>.
	Spec string
	// TimeZone is an IANA zone for a Spec without a CRON_TZ= prefix. Empty
	// means UTC.
	TimeZone string
	// Args is the payload of every run; its Kind() is the run's kind.
	// Required. It is encoded to JSON at registration.
	Args core.Args
	// Queue of the runs; empty means the args' own Opts' queue (when Args
	// implements docket.OptsProvider), else the queue the kind was
	// registered with (handlers.KindOpts), else "default", as for any
	// enqueue.
	Queue string
	// Priority of the runs, -10..10; zero means the args' own Opts', else
	// the kind's registered priority, if any.
	Priority int
	// Tenant and SerialKey of the runs (see docket.Opts); empty means the
	// args' own Opts', else none.
	Tenant, SerialKey string
	// MaxAttempts of each run; zero means the args' own Opts', else the
	// kind's registered max attempts, else the default (25).
	MaxAttempts int
	// Window spreads the runs of many schedules with the same spec: each
	// run is enqueued at its fire time plus an offset in [0, Window) taken
	// from a hash of Name, the same on every run. Zero means no spread.
	Window time.Duration
	// Misfire is the policy for missed fire times; empty means Skip.
	Misfire Misfire
	// Paused registers a new schedule paused. It does not change the pause
	// state of a schedule that exists: Pause and Resume (and `docket
	// schedules pause|resume`) own it, so a restart does not undo an
	// operator's pause.
	Paused bool
}

// compiled is a validated schedule ready to write.
type compiled struct {
	s       Schedule
	spec    *Spec
	kind    string
	payload []byte
	misfire Misfire
}

func compile(s Schedule) (compiled, error) {
	bad := func(format string, args ...any) (compiled, error) {
		return compiled{}, fmt.Errorf("%w: schedule %q: %s", ErrInvalidSchedule, s.Name, fmt.Sprintf(format, args...))
	}
	if s.Name == "" {
		return bad("empty name")
	}
	if len(KeyPrefix)+len(s.Name) > core.MaxKeyLen {
		return bad("name longer than %d bytes", core.MaxKeyLen-len(KeyPrefix))
	}
	for _, r := range s.Name {
		if r < 0x21 || r == 0x7f {
			return bad("name contains spaces or control characters")
		}
	}
	spec, err := ParseSpec(s.Spec, s.TimeZone)
	if err != nil {
		return compiled{}, fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	if s.Args == nil {
		return bad("nil Args")
	}
	if s.Window < 0 {
		return bad("negative Window")
	}
	m := s.Misfire
	if m == "" {
		m = Skip
	}
	if m != Skip && m != RunOnce && m != CatchUp {
		return bad("misfire policy %q: want %q, %q or %q", m, Skip, RunOnce, CatchUp)
	}
	if s.Priority < core.MinPriority || s.Priority > core.MaxPriority {
		return bad("priority %d outside %d..%d", s.Priority, core.MinPriority, core.MaxPriority)
	}
	if s.MaxAttempts < 0 {
		return bad("negative MaxAttempts")
	}
	payload, err := json.Marshal(s.Args)
	if err != nil {
		return bad("encode args of kind %s: %v", s.Args.Kind(), err)
	}
	// The job of every run, checked now rather than at each enqueue. Only
	// the fire time in its meta is left out: it is always valid.
	run := enqueue.Opts{
		Queue: s.Queue, Priority: s.Priority, Tenant: s.Tenant, SerialKey: s.SerialKey,
		MaxAttempts: s.MaxAttempts, UniqueKey: KeyPrefix + s.Name, Meta: map[string]string{MetaSchedule: s.Name},
	}
	if err := enqueue.Validate(s.Args, run); err != nil {
		return compiled{}, fmt.Errorf("%w: schedule %q: %w", ErrInvalidSchedule, s.Name, err)
	}
	return compiled{s: s, spec: spec, kind: s.Args.Kind(), payload: payload, misfire: m}, nil
}

// Offset returns the spread offset of a schedule: a stable hash of name
// mapped into [0, window), in whole milliseconds. It is the same on every
// run and in every process, and spreads names evenly. A window of zero or
// less gives zero.
func Offset(name string, window time.Duration) time.Duration {
	ms := window.Milliseconds()
	if ms <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return time.Duration(mix(h.Sum64())%uint64(ms)) * time.Millisecond
}

// mix is splitmix64's finalizer: FNV's low bits alone are poorly spread for
// names that differ only in their last characters.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rawArgs enqueues a stored payload under its kind.
type rawArgs struct {
	kind    string
	payload json.RawMessage
}

func (a rawArgs) Kind() string                 { return a.kind }
func (a rawArgs) MarshalJSON() ([]byte, error) { return a.payload, nil }
