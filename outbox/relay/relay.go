package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DB is what the relay needs of a database: *pgxpool.Pool satisfies it.
// It must not be a transaction: the relay commits as it goes.
type DB interface {
	pgsql.TxDB
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Config configures a Relay. Only Publisher is required; every zero value
// means the documented default.
type Config struct {
	// Schema holds Docket's tables. Empty means "public".
	Schema string
	// Publisher delivers messages to the broker. Required. The relay
	// closes it when Run returns.
	Publisher Publisher
	// ID identifies the relay across restarts, in docket_relays and in its
	// logs. A relay restarted under the ID of one that died (kill -9, a
	// crash, a lost host) takes its partitions back at once instead of
	// waiting out their lease: a restart costs about LeaseTTL/5, not
	// LeaseTTL. One live relay at a time holds an ID, through an advisory
	// lock on a connection of its own (see ListenURL): a second one with
	// the same ID, in any process, waits, publishing nothing, until the
	// first stops or dies. Empty means the first ID of
	// "hostname/schema/1", "hostname/schema/2", ... that no live relay
	// holds: a relay restarted on the same host takes the place of the one
	// that died there. Without a connection of its own (DisableNotify
	// without ListenURL, or a DB that is not a *pgxpool.Pool) a relay holds
	// no ID: it is named "hostname:pid", its partitions wait out their
	// lease after a crash, and ID must be empty. At most MaxIDLen bytes of
	// UTF-8 without control characters.
	ID string
	// BatchSize is how many events one round fetches and publishes at most;
	// it bounds the messages in flight. Zero means 500.
	BatchSize int
	// PollInterval is how long an idle relay waits before it looks for new
	// events again, when no notification wakes it earlier. Zero means
	// 100ms.
	PollInterval time.Duration
	// DisableNotify turns off LISTEN: the relay finds events by polling
	// only. Publishers announce committed events on the schema's event
	// channel (outbox.Client.EventChannel); without LISTEN an event waits up
	// to PollInterval. Use it where LISTEN cannot work (behind a transaction
	// pooler), or set ListenURL. Without ListenURL it also says that db's
	// sessions are not the relay's own: the relay then holds no ID.
	DisableNotify bool
	// ListenURL, when set, is where the relay's connections of its own go,
	// straight to PostgreSQL past a transaction pooler: its LISTEN and the
	// session that holds its ID. Empty means the configuration of db when
	// it is a *pgxpool.Pool (unless DisableNotify); any other DB polls and
	// holds no ID.
	ListenURL string
	// LeaseTTL is how long a relay's ownership of its partitions lasts
	// without renewal: the time after which a dead relay's events are
	// taken over by the others. The relay renews every LeaseTTL/3, and one
	// publish round may last at most LeaseTTL/2. Zero means 15s; at least
	// 300ms.
	LeaseTTL time.Duration
	// MaxAttempts is how many permanent refusals (see Permanent) an event
	// gets before it becomes a dead letter. Transient failures (broker
	// down) are retried forever and never counted. Zero means 3.
	MaxAttempts int
	// RefusalBackoff is how long an event refused permanently waits, with
	// the later events of its key, before its next attempt; the wait grows
	// four times with each further refusal, up to a minute. A broker may
	// refuse for a while and then accept (a RabbitMQ node recovering its
	// bindings after a restart), so an event becomes a dead letter only
	// after refusals spread over time: with the defaults, the third
	// refusal, at least 10 seconds after the first. Zero means 2s.
	RefusalBackoff time.Duration
	// SkipDead makes a dead letter let the later events of its key pass.
	// False (the default) holds them back until the dead letter is
	// replayed or purged, which keeps the key's order.
	SkipDead bool
	// MinBackoff and MaxBackoff bound the wait after a failed round, which
	// doubles from MinBackoff up to MaxBackoff, with jitter, while the
	// broker or the database keeps failing. Zero means 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Retention is how long published events are kept, counted in whole
	// UTC days: a day's partition is dropped once every event in it was
	// published and the day ended more than Retention ago. Zero means 7
	// days; -1 keeps every partition.
	Retention time.Duration
	// Logger receives the relay's warnings. Nil means slog.Default().
	Logger *slog.Logger
}

// Stats are a relay's counters since New.
type Stats struct {
	// Published counts messages the broker acknowledged.
	Published uint64
	// Refused counts permanent refusals, DeadLettered the events that
	// became dead letters, and Failed the transient publish failures.
	Refused, DeadLettered, Failed uint64
	// Parts is how many partitions the relay holds now.
	Parts int
}

// Relay publishes committed events of its partitions to a broker. Any
// number of relays may run against one schema, in any processes: they share
// the 64 partitions between them, and take over the partitions of a relay
// that stopped renewing its lease.
type Relay struct {
	db   DB
	cfg  Config
	id   uuid.UUID
	log  *slog.Logger
	pub  Publisher
	ttl  time.Duration
	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}

	published, refused, dead, failed atomic.Uint64
	parts                            atomic.Int64

	listen    *listener // nil: the relay polls only
	channel   string    // the schema's event channel
	rebalance atomic.Bool

	ident *identity // nil: the relay holds no ID
	name  atomic.Pointer[string]
	// Set by the Run loop for each hold of the ID (see identity.go).
	sess         *session  // the hold of the ID; nil while none
	heldAt       time.Time // when sess took the ID
	fresh        bool      // no lease maintenance yet in this hold
	publishAfter time.Time // no round before it: a previous holder may still publish

	owned    []int16        // partitions held, maintained by the Run loop
	unmarked []int64        // events acknowledged, not marked published yet
	holds    map[int64]hold // refused events waiting for their next attempt (see retry.go)
	ahead    []row          // events fetched ahead by the last round, to publish next
	fl       floorState
	// floorReset says that events may have become pending below the floor:
	// a dead letter was replayed or purged (see floor.go).
	floorReset  atomic.Bool
	floorSeen   atomic.Int64 // fl.floor, for tests
	nextLease   time.Time    // when to renew
	nextRetain  time.Time    // when to run partition maintenance
	leaseExpiry time.Time
}

// ErrNoPublisher is returned by New when Config.Publisher is nil.
var ErrNoPublisher = errors.New("docket: relay needs a Publisher")

// New returns a relay on db for cfg. It fails on a nil Publisher, an
// invalid schema name, ID or ListenURL, an ID without a connection of its
// own to hold it, or a LeaseTTL under 300ms; it does not connect.
func New(db DB, cfg Config) (*Relay, error) {
	if cfg.Publisher == nil {
		return nil, ErrNoPublisher
	}
	schema, err := pgsql.Schema(cfg.Schema)
	if err != nil {
		return nil, err
	}
	cfg.Schema = schema
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.LeaseTTL < 300*time.Millisecond {
		return nil, fmt.Errorf("docket: relay lease TTL %s under 300ms", cfg.LeaseTTL)
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.RefusalBackoff <= 0 {
		cfg.RefusalBackoff = 2 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.Retention == 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	own, err := ownConnConfig(cfg, db)
	if err != nil {
		return nil, err
	}
	r := &Relay{
		db: db, cfg: cfg, pub: cfg.Publisher, ttl: cfg.LeaseTTL,
		channel: pgsql.EventChannel(schema),
	}
	if r.ident, err = newIdentity(cfg, own); err != nil {
		return nil, err
	}
	name := cfg.ID
	if r.ident == nil {
		host, _ := os.Hostname()
		r.id, name = uuid.New(), host+":"+strconv.Itoa(os.Getpid())
	}
	r.name.Store(&name)
	r.log = log.With("relay", relayName{r})
	r.listen = newListener(r, own)
	return r, nil
}

// ID returns the ID the relay holds: Config.ID, or the default it took;
// "hostname:pid" for a relay without an ID (see Config.ID); empty while it
// waits to take its default ID.
func (r *Relay) ID() string { return *r.name.Load() }

// relayName logs the relay's ID as it is when a line is written.
type relayName struct{ r *Relay }

func (n relayName) LogValue() slog.Value { return slog.StringValue(n.r.ID()) }

// Stats returns the relay's counters.
func (r *Relay) Stats() Stats {
	return Stats{
		Published: r.published.Load(), Refused: r.refused.Load(), DeadLettered: r.dead.Load(),
		Failed: r.failed.Load(), Parts: int(r.parts.Load()),
	}
}

// Start runs the relay in a goroutine until Stop is called or ctx ends. It
// fails if the relay was started before.
func (r *Relay) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return errors.New("docket: relay already started")
	}
	ctx, r.stop = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		if err := r.Run(ctx); err != nil {
			r.log.Error("docket: relay stopped", "err", err)
		}
	}()
	return nil
}

// Stop ends a relay started with Start: it finishes the round in flight,
// gives its partitions back so other relays take them over at once, and
// closes the Publisher. It returns ctx's error if ctx ends first.
func (r *Relay) Stop(ctx context.Context) error {
	r.mu.Lock()
	stop, done := r.stop, r.done
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run publishes until ctx ends, then gives its partitions back, closes the
// Publisher and returns nil. Database and broker failures are logged and
// retried with backoff, never returned: a relay outlives outages. A relay
// with an ID first takes it (see Config.ID), and publishes only while it
// holds it.
func (r *Relay) Run(ctx context.Context) error {
	defer func() {
		r.leave(ctx)
		if err := r.pub.Close(); err != nil {
			r.log.Warn("docket: relay publisher close", "err", err)
		}
	}()
	var wake chan struct{}
	if r.listen != nil {
		lctx, stopListen := context.WithCancel(ctx)
		listened := make(chan struct{})
		go func() {
			defer close(listened)
			r.listen.run(lctx)
		}()
		defer func() {
			stopListen()
			<-listened
		}()
		wake = r.listen.wake
	}
	if r.ident == nil {
		r.publish(ctx, wake)
		return nil
	}
	for {
		s, err := r.acquire(ctx)
		if err != nil {
			return nil // ctx ended
		}
		r.hold(s)
		// The session's watch ends the hold when the session stops holding
		// the ID: publishing stops, and a relay that takes the ID over
		// waits for that (see holdOff).
		hctx, lost := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			s.watch(hctx, r.holdOff()/4, lost)
		}()
		r.publish(hctx, wake)
		lost()
		<-watched
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("docket: relay lost the session that holds its id; it publishes nothing until it holds the id again")
		r.unhold(ctx)
	}
}

// holdOff is how long a relay that took its ID while partitions of the ID
// were still under lease waits before it publishes them. A previous holder
// that is alive but lost its session stops within holdOff/2 (its watch
// checks every holdOff/4, each check bounded by holdOff/4); the rest is
// margin for a loaded machine.
func (r *Relay) holdOff() time.Duration { return r.ttl / 5 }

// hold starts a hold of the relay's ID by s.
func (r *Relay) hold(s *session) {
	r.sess, r.heldAt, r.fresh = s, time.Now(), true
	r.id = rowID(s.id)
	r.name.Store(&s.id)
	r.nextLease, r.publishAfter = time.Time{}, time.Time{}
}

// unhold ends a hold whose session was lost: the relay forgets its
// partitions, which its ID still owns, until it holds the ID again.
func (r *Relay) unhold(ctx context.Context) {
	if err := r.flushMarks(ctx); err != nil {
		r.log.Warn("docket: relay could not mark its last acknowledged events; they will be published again", "err", err)
	}
	r.sess.close()
	r.sess = nil
	r.owned, r.ahead = nil, nil
	r.setFloor(floorState{})
	r.parts.Store(0)
}

// setFloor takes the floor after a fetch; a replay announced meanwhile,
// which the fetch may have missed, takes the relay back to no floor.
func (r *Relay) setFloor(fl floorState) {
	r.fl = fl
	if r.floorReset.Swap(false) {
		r.fl = floorState{}
	}
	r.floorSeen.Store(r.fl.floor)
}

// leave ends Run: it marks what was acknowledged, gives the partitions
// back (through the session that holds the ID, so only its holder can)
// and frees the ID.
func (r *Relay) leave(ctx context.Context) {
	if err := r.flushMarks(ctx); err != nil {
		r.log.Warn("docket: relay could not mark its last acknowledged events; they will be published again", "err", err)
	}
	if r.ident != nil && r.sess == nil {
		return // it holds no ID, so no partitions
	}
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := r.withLeaseDB(func(db leaseDB) error {
		_, err := db.Exec(bg, sqlLeave.For(r.cfg.Schema), r.id, r.channel)
		return err
	})
	if err != nil {
		r.log.Warn("docket: relay could not give its partitions back; they are taken over when its lease ends", "err", err)
	}
	r.parts.Store(0)
	if r.sess != nil {
		r.sess.close()
		r.sess = nil
	}
}

// withLeaseDB runs f on what runs the lease statements: the session that
// holds the relay's ID, or else the relay's DB.
func (r *Relay) withLeaseDB(f func(leaseDB) error) error {
	if r.sess == nil {
		return f(r.db)
	}
	r.sess.mu.Lock()
	defer r.sess.mu.Unlock()
	return f(r.sess.conn)
}

// publish runs rounds until ctx ends.
func (r *Relay) publish(ctx context.Context, wake chan struct{}) {
	var backoff time.Duration
	var active time.Time // of the last wake-up or round that found events
	for ctx.Err() == nil {
		wait, found, err := r.step(ctx)
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		if found {
			active = now
		}
		if err == nil && wait > settle && now.Sub(active) < 2*settle {
			// Publishers announce at most once per debounce window: events
			// committed just after an announced one wake no one.
			wait = settle
		}
		// However long the poll, the lease is renewed in time.
		wait = min(wait, max(time.Until(r.nextLease), 0))
		// A notification ends an idle wait, never a backoff: a broker
		// that is down is not retried faster because events keep coming.
		woken := wake
		if err != nil {
			backoff = pgsql.NextBackoff(backoff, r.cfg.MinBackoff, r.cfg.MaxBackoff)
			r.log.Warn("docket: relay round failed; backing off", "err", pgsql.WrapPooler(err), "backoff", backoff)
			wait, woken = pgsql.Jitter(backoff), nil
		} else {
			backoff = 0
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			case <-woken:
				t.Stop()
				active = time.Now()
			}
		}
	}
}

// shortLeaseCheck is how often a relay short of its share of partitions
// looks for partitions given back.
const shortLeaseCheck = 250 * time.Millisecond

// settle is how soon an idle relay looks again after a wake-up or a round
// that found events: longer than the publishers' default debounce window
// (outbox.Config.NotifyDebounce, 2ms).
const settle = 5 * time.Millisecond

// step renews leases when due and runs one round. It returns how long to
// wait before the next step and whether the round found events.
func (r *Relay) step(ctx context.Context) (time.Duration, bool, error) {
	now := time.Now()
	if r.rebalance.Swap(false) {
		r.nextLease = now // another relay gave partitions back
	}
	if !now.Before(r.nextLease) {
		// Marks are fenced by the partitions held: write them before any
		// partition may be given back, and fetch again after.
		r.ahead = nil
		if err := r.flushMarks(ctx); err != nil {
			return 0, false, err
		}
		// The partitions held may change, and replays that did not
		// notify are found: fetch from no floor again.
		r.setFloor(floorState{})
		short, err := r.maintainLeases(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("lease: %w", err)
		}
		r.nextLease = now.Add(r.ttl / 3)
		if short {
			// Partitions are on their way from a relay above its share.
			r.nextLease = now.Add(min(r.ttl/3, shortLeaseCheck))
		}
		r.leaseExpiry = now.Add(r.ttl)
	}
	if r.cfg.Retention >= 0 && !now.Before(r.nextRetain) && len(r.owned) > 0 {
		r.nextRetain = now.Add(time.Minute)
		if err := r.maintainPartitions(ctx, now); err != nil {
			r.log.Warn("docket: relay partition maintenance", "err", pgsql.WrapPooler(err))
		}
	}
	if len(r.owned) == 0 {
		return r.cfg.PollInterval, false, nil
	}
	r.setFloor(r.fl) // a replay announced since the last fetch drops the floor before this one
	if wait := r.publishAfter.Sub(now); wait > 0 {
		return wait, false, nil
	}
	n, err := r.round(ctx)
	if err != nil {
		return 0, false, err
	}
	if n < r.cfg.BatchSize && r.ahead == nil {
		if n > 0 {
			// Caught up: the next round, once the publishers' debounce
			// window passed, carries the marks with its fetch, one round
			// trip where a write of its own and then that fetch took two.
			return settle, true, nil
		}
		return r.cfg.PollInterval, false, nil
	}
	return 0, true, nil
}
